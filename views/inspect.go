package views

// InspectList is /inspect: the live and recent client sessions.
type InspectList struct {
	// BaseURL is this server's /v1, for pointing a client at it.
	BaseURL string
	Rows    []SessionRow
	// Drills are the drill names the form offers (api.DrillNames).
	Drills []string
}

// SessionRow is one session of the list; inspect.js renders the same
// cells from the live feed.
type SessionRow struct {
	ID, Short, Href, Client, Transport string
	Turns, Errors, Cache, Tokens       string
	Overhead, Updated, UpdatedISO      string
	Live                               bool
}

// SessionHead is what /inspect/{id} renders before inspect.js fetches the
// session and follows its feed.
type SessionHead struct {
	ID, Key, Transport          string
	Started, StartedISO         string
	UserAgent, Originator, Beta string
	ExportHref, Permalink       string
	// WorkloadHref serves the session as a workload; RaceConfig is the
	// race "Race this session" starts with it (JSON, no workload yet).
	WorkloadHref, RaceConfig string
	// CorpusHref places the session among the corpus (/corpus?session=).
	CorpusHref string
	Live       bool
	// HTTP says the summary shows the WebSocket estimate.
	HTTP bool
	// Legend is the waterfall's groups, as api names them.
	Legend []Stage
}
