package views

// Page is what the layout needs around every page.
type Page struct {
	Title string
	// Nav is the active section: home, race, explorer, runs, sweep,
	// inspect or docs.
	Nav string
	// Scripts are asset names under static/, loaded deferred in order.
	Scripts []string
	// KeyRequired says the server runs with --api-key: the header then
	// offers Sign out (common.js posts /logout).
	KeyRequired bool
	// Present is presenter mode (?present): large type, one screen.
	Present bool

	signedOut bool
}

// asSignedOut is p for the login page, which offers no Sign out.
func (p Page) asSignedOut() Page {
	p.signedOut = true
	return p
}

// Option is one choice of a select.
type Option struct {
	Value, Label, Description string
	Selected                  bool
}

// LaneChoice is one lane checkbox of the race form.
type LaneChoice struct {
	Name, Label, How string
	Checked          bool
}

// Home is the first-visit page.
type Home struct {
	// Preset is the ready-made race's config as JSON, posted by "Race it
	// live": the race the recording ran.
	Preset      string
	PresetLabel string
	// Estimate says how long the ready-made race will take ("about 20 s").
	Estimate string
	// Full is the full race (the longer scenario, lanes one after
	// another) as JSON, with its label and estimate.
	Full, FullLabel, FullEstimate string
	// Stack is the ready-made race's preset and Reading its reading.
	Stack, Reading string
	// Recording is the recorded race the page plays; nil for none.
	Recording *Recording
}

// Race is the race page: the form and, when a run is shown, its lanes.
type Race struct {
	Scenarios  []Option
	Profiles   []Option
	Lanes      []LaneChoice
	RTTms      string
	ToolTimeMs string
	Seed       string
	Repeats    string
	Sequential bool
	// TakeTurns: the lanes run at once, one request at a time, each on
	// its own clock.
	TakeTurns bool
	// Estimate says how long presenter mode's race will take ("about 20
	// s"), shown by its start button.
	Estimate string
	// Stacks are the stack select's choices; StackParams one input per
	// stack parameter, filled from the selected stack; StackPresets the
	// presets' parameters as JSON, for the script to refill them.
	Stacks       []Option
	StackParams  []StackParam
	StackPresets string
	// DecodeTPS is the optional decode rate ("" for the profile's own).
	DecodeTPS string
	// CompactThreshold is the optional compaction threshold in tokens ("":
	// no compaction).
	CompactThreshold string
	// ReasoningEfforts and ReasoningSummaries are the opt-in reasoning
	// selects: "" is off (no lane reasons) and no summary.
	ReasoningEfforts, ReasoningSummaries []Option
	// Limits are the form's min and max, the run API's own (rollout's
	// limits, checked by Normalize).
	Limits RaceLimits
	// RunID is the run to show (from ?run=), "" for none.
	RunID string
	// RunLanes are the lane cards rendered for RunID before the feed opens.
	RunLanes []LaneCard
	// LaneTemplates are every lane's card, named and explained by the
	// server, which race.js clones for a race it starts.
	LaneTemplates []LaneCard
	// Cores is how many CPU cores the lanes share.
	Cores int
	// Stages is the waterfall legend.
	Stages []Stage
	// Groups are the waterfall groups as JSON (api.WaterfallGroups): the
	// charts' labels.
	Groups string
	// Present is presenter mode: four steps, one screen each, and keys.
	Present bool
	// Drills are the drills the schedule offers (api.DrillNames);
	// DrillSchedule the shown run's schedule as JSON ("[]" for none), for
	// the script to fill the rows.
	Drills        []DrillChoice
	DrillSchedule string
	// Story is presenter mode's first step, one line per lane of the race.
	Story []StoryLane
	// Preset is the ready-made race as JSON, which presenter mode's start
	// posts (web's preset; "" outside presenter mode).
	Preset string
	// Recording is the recorded race the page opens on when it shows no
	// run; nil for none.
	Recording *Recording
}

// StoryLane is one step of presenter mode's story: a lane and what it
// does, in the result's words.
type StoryLane struct {
	Name, Label, Story string
}

// DrillChoice is one drill the race form offers: Lanes are the lanes it
// can hit (space-separated), Affects says so in words.
type DrillChoice struct {
	Name, Lanes, Affects string
}

// LaneCard is one lane of a race, as first rendered.
type LaneCard struct {
	Name, Label, How, Status string
}

// StackParam is one stack parameter's input on the race form, with its
// range (apistack.Params).
type StackParam struct {
	Key, Label, Value string
	Min, Max          string
}

// Stage is one colour of the waterfall legend. Kind "modelled" draws its
// swatch hatched, as its bars are.
type Stage struct {
	Name, Label, Kind string
}

// Explorer is the request console.
type Explorer struct {
	Examples []Example
	// Body is the first example's body, shown in the editor.
	Body string
}

// Example is one ready-made response.create body.
type Example struct {
	Key, Label, Body string
}

// RunsList is the list of stored runs with its filter.
type RunsList struct {
	Rows      []RunRow
	Scenarios []Option
	Profiles  []Option
	Since     string
	Until     string
	HasMore   bool
	// Problem explains a filter that could not be used; ProblemField is
	// the filter input it is about ("since", "until"), if any.
	Problem      string
	ProblemField string
}

// RunRow is one run in the list.
type RunRow struct {
	ID, Href, RaceHref  string
	Created, CreatedISO string
	Scenario, Profile   string
	Status              string
	Lanes               string
	// Settings is how the run was set up: round trip, tool time, stack,
	// and whether the lanes ran together or one after another.
	Settings string
	Saving   string
}

// RunDetail is one stored run: summary, timeline and conversation.
type RunDetail struct {
	ID, Status          string
	Created, CreatedISO string
	Config              []Field
	Summary             *Summary
	Lanes               []LaneTranscript
	RaceHref            string
	ExportHref          string
	Permalink           string
	Repeats             int
	Stages              []Stage
	Groups              string // as Race.Groups
	// WorkloadAnswer is a workload race's answer in one sentence
	// (rollout.WorkloadAnswer); WorkloadHref the workload's permalink;
	// CorpusHref places it among the corpus.
	WorkloadAnswer, WorkloadHref, CorpusHref string
}

// Field is a labelled value.
type Field struct {
	Label, Value string
}

// Summary is the end of a race.
type Summary struct {
	// Headline and Split are the run summary's sentences, as stored;
	// StackDoc links to the stack's explanation.
	Headline string
	Split    string
	StackDoc string
	Detail   string
	Note     string
	// TimeWent is one sentence of where each lane's time went.
	TimeWent string
	// WhatItWouldTake is the extra API overhead per turn optimized HTTP
	// would need for WebSocket to save 40%, beside what it measured.
	WhatItWouldTake string
	// Overlap says which runs ran at the same time, "" for none.
	Overlap string
	// Busy warns that other processes kept the machine busy enough to
	// move the measured part, "" when they did not.
	Busy string
	Rows []SummaryRow
	// SameRace starts the same race under another stack, one click each.
	SameRace []SameRace
}

// SameRace is a button that starts a race with Config (JSON): the run's
// config with only its stack changed.
type SameRace struct {
	Label  string `json:"label"`
	Config string `json:"config"`
}

// SummaryRow is one lane's line of the summary table.
type SummaryRow struct {
	Lane, Label, Status string
	Total, Turns        string
	Input, Cached       string
	Output              string
	BytesSent           string
	MedianOverhead      string
	StackPerTurn        string // the modelled API stack per turn
	APICPU              string // the engine's CPU time of API work per rollout
	RolloutsPerCore     string // lane total / API CPU
	SavedVsHTTP         string
	Error               string
}

// LaneTranscript is one lane's conversation.
type LaneTranscript struct {
	Name, Label, Status, Error string
	Turns                      []TurnView
}

// TurnView is one response and the tool work after it.
type TurnView struct {
	Title      string
	Repeat     int
	ResponseID string
	Timing     string
	Tokens     string
	Text       string
	Calls      []CallView
	Error      string
}

// CallView is one tool call with its real output.
type CallView struct {
	Name, Arguments, CallID, Output string
}

// Docs is the endpoints and SDK set-up page.
type Docs struct {
	BaseURL     string // e.g. http://127.0.0.1:8080
	WSURL       string // e.g. ws://127.0.0.1:8080/v1/responses
	KeyRequired bool
}

// Problem is an error page.
type Problem struct {
	Status  int
	Title   string
	Message string
}

// Sweep is /sweep: the reference sweep the binary carries first, its
// settings beside the one-click race's, what each series is, then the
// stored fair runs.
type Sweep struct {
	Reference *SweepReference
	// Settings compare the reference's settings with the one-click race's,
	// one row per setting.
	Settings []SweepSetting
	// Series say in words what each lane and stack of the charts is.
	Series []SweepSeries
	// Charts are the stored fair runs' charts; Runs counts those runs, and
	// Only phrases the one run when there is just one (no chart then).
	Charts []SweepChart
	Runs   int
	Only   string
}

// SweepSetting is one setting of the reference sweep and of the one-click
// race; Why says why they differ ("" when they are the same).
type SweepSetting struct {
	Name, Reference, Race, Why string
}

// SweepSeries explains one series (a lane) or one chart (a stack) in
// words; Class is the lane's colour and dash, "" for a stack.
type SweepSeries struct {
	Name, Class, Text string
}

// SweepChart is one scenario's sweep under one stack: the share saved
// against optimized HTTP by model speed, one line per lane (and settings),
// laid out in SVG units.
type SweepChart struct {
	Scenario, Stack string
	Lines           []SweepLine
	ChartFrame
}

// SweepLine is one lane's points under one set of settings, in speed
// order.
type SweepLine struct {
	Name, Stack, Lane string
	// Settings are what every point of the series shares (stack, round
	// trip, tool time, bandwidth); Class picks its colour and dash.
	Settings, Class string
	Points          []SweepPoint
	Path            string // the polyline's points
	EndLabel
}

// SweepPoint is one fair run.
type SweepPoint struct {
	TPS, Saved float64
	Run        string
	X, Y       float64
}

// EndLabel is a series' name written at its line's right end, moved up or
// down off its neighbours' (a leader joins it to the end when it moved).
type EndLabel struct {
	Label      string
	LabelX     float64 // where the label starts
	LabelY     float64 // the label's middle
	EndX, EndY float64 // the line's last point
}

// ChartFrame is a line chart's box, in SVG units: its size, its plot area
// and its axes' ticks (the sweep's and the sensitivity chart's).
type ChartFrame struct {
	W, H           float64
	X0, X1, Y0, Y1 float64 // the plot area
	XTicks, YTicks []ChartTick
	// XTitle and YTitle name the axes (chartAxes draws a title given).
	XTitle, YTitle string
}

// ChartTick is one axis label, and where it stands.
type ChartTick struct {
	At    float64
	Label string
}

// SensitivityChart draws docs/stack.md's sensitivity table: the headline's
// saving for each stack parameter at each factor.
type SensitivityChart struct {
	Factors []string
	Lines   []SensitivityLine
	// Together says which lines lie on one another (the same saving at
	// every factor), "" when none do.
	Together string
	ChartFrame
}

// SensitivityLine is one parameter's savings, in factor order; Class picks
// its colour and dash, which the legend repeats.
type SensitivityLine struct {
	Name, Class string
	Points      []SensitivityPoint
	Path        string
	EndLabel
}

// SensitivityPoint is the saving (in %) at one factor.
type SensitivityPoint struct {
	Factor string
	Index  int
	Saved  float64
	X, Y   float64
}

// SweepReference is the sweep the binary carries (docs/sweep-reference.json):
// when, how and where it was made, and its charts.
type SweepReference struct {
	Date, Command, Machine string
	Charts                 []SweepChart
}

// RaceLimits are the race form's number limits, as the run API checks them.
type RaceLimits struct {
	MaxRTTms, MaxToolTimeMs, MaxRepeats string
	MinDecodeTPS, MaxDecodeTPS          string
	MaxDrillTimes                       string
	// MaxCompactThreshold is the served engine's largest context window.
	MaxCompactThreshold string
}

// Recording is the recorded reference race the binary carries, as the
// home page and presenter mode play it: Label says it is a recording
// (date, machine, command); Frame is its race as the live feed's last
// frame (JSON), which the race track plays.
type Recording struct {
	Label, Frame string
}
