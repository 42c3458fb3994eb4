package api

// The create parameters agentloop accepts, listed once: the openai npm
// package's ResponseCreateParams (7.59.0) plus agentloop's own and what Codex 0.171.0 sends
// beyond the SDK. Anything else is "Unknown parameter" (ValidateCreate).
// Each entry says the JSON types a value may have and, where the SDK
// declares one, its enum or its fields.
var createParams = map[string]param{
	// The SDK's ResponseCreateParams.
	"access_programs":        {kinds: kObject},
	"background":             {kinds: kBool | kNull},
	"background_options":     {kinds: kObject},
	"context_management":     {kinds: kArray | kNull, each: &param{kinds: kObject, fields: contextManagementFields}},
	"conversation":           {kinds: kString | kObject | kNull, fields: map[string]param{"id": {kinds: kString, required: true}}},
	"image":                  {kinds: kObject},
	"include":                {kinds: kArray | kNull, each: &param{kinds: kString, enum: includables}},
	"input":                  {kinds: kString | kArray},
	"instructions":           {kinds: kString | kNull},
	"max_output_tokens":      {kinds: kInteger | kNull},
	"max_tool_calls":         {kinds: kInteger | kNull},
	"metadata":               {kinds: kObject | kNull},
	"model":                  {kinds: kString},
	"moderation":             {kinds: kObject | kNull},
	"parallel_tool_calls":    {kinds: kBool | kNull},
	"previous_response_id":   {kinds: kString | kNull},
	"prompt":                 {kinds: kObject | kNull},
	"prompt_cache_key":       {kinds: kString | kNull},
	"prompt_cache_options":   {kinds: kObject},
	"prompt_cache_retention": {kinds: kString | kNull, enum: []string{"in_memory", "24h"}},
	"reasoning":              {kinds: kObject | kNull, fields: reasoningFields},
	"safety_identifier":      {kinds: kString | kNull},
	"service_tier":           {kinds: kString | kNull, enum: ServiceTiers},
	"store":                  {kinds: kBool | kNull},
	"stream":                 {kinds: kBool | kNull},
	"stream_options":         {kinds: kObject | kNull},
	"temperature":            {kinds: kNumber | kNull},
	"text":                   {kinds: kObject, fields: textFields},
	"tool_choice":            {kinds: kString | kObject},
	"tools":                  {kinds: kArray},
	"top_logprobs":           {kinds: kInteger | kNull},
	"top_p":                  {kinds: kNumber | kNull},
	"truncation":             {kinds: kString | kNull, enum: Truncations},
	"user":                   {kinds: kString},

	// agentloop's own (docs/protocol.md, "Requests").
	"generate":   {kinds: kBool},                                         // false: the WebSocket warm-up
	"stream_id":  {kinds: kString},                                       // a WebSocket lane
	"ignore_eos": {kinds: kBool},                                         // exact-length replies, as vLLM-compatible servers take it
	"type":       {kinds: kString, enum: []string{ClientResponseCreate}}, // a WebSocket message's type

	// What Codex 0.171.0 sends beyond the SDK's declaration (its recorded
	// requests are in testdata/codex).
	"client_metadata": {kinds: kObject | kNull},
}

// compactParams are the parameters of POST /v1/responses/compact
// (ResponseCompactParams): create parameters of the same shapes.
var compactParams = paramsNamed("model", "input", "instructions", "previous_response_id", "prompt_cache_key",
	"prompt_cache_options", "prompt_cache_retention", "service_tier", "image")

// Enums of the create parameters, as the SDK declares them.
var (
	Truncations        = []string{"auto", "disabled"}
	ServiceTiers       = []string{"auto", "default", "flex", "scale", "priority", "fast", "ultrafast"}
	ReasoningEfforts   = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}
	ReasoningSummaries = []string{"auto", "concise", "detailed"}
	TextFormatTypes    = []string{TextFormatText, TextFormatJSONObject, TextFormatJSONSchema}
	ToolChoiceModes    = []string{"none", "auto", "required"}
	includables        = []string{"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
		"message.input_image.image_url", "computer_call_output.output.image_url", "code_interpreter_call.outputs",
		IncludeReasoningEncryptedContent, "message.output_text.logprobs"}
)

// Text format types.
const (
	TextFormatText       = "text"
	TextFormatJSONObject = "json_object"
	TextFormatJSONSchema = "json_schema"
)

// IncludeReasoningEncryptedContent asks for reasoning items'
// encrypted_content (package seal).
const IncludeReasoningEncryptedContent = "reasoning.encrypted_content"

var reasoningFields = map[string]param{
	"context":          {kinds: kString | kNull, enum: []string{"auto", "current_turn", "all_turns"}},
	"effort":           {kinds: kString | kNull, enum: ReasoningEfforts},
	"generate_summary": {kinds: kString | kNull, enum: ReasoningSummaries},
	"mode":             {kinds: kString},
	"summary":          {kinds: kString | kNull, enum: ReasoningSummaries},
}

var textFields = map[string]param{
	"format":    {kinds: kObject, fields: textFormatFields},
	"verbosity": {kinds: kString | kNull, enum: []string{"low", "medium", "high"}},
}

// textFormatFields are the fields of every text format type together;
// ValidateCreate checks which a type needs.
var textFormatFields = map[string]param{
	"type":        {kinds: kString, enum: TextFormatTypes, required: true},
	"name":        {kinds: kString},
	"schema":      {kinds: kObject},
	"strict":      {kinds: kBool | kNull},
	"description": {kinds: kString},
}

var contextManagementFields = map[string]param{
	"type":              {kinds: kString, required: true, enum: []string{ContextManagementCompaction}},
	"compact_threshold": {kinds: kNumber | kNull},
}

// Tool types the SDK declares (its Tool union). Function, custom
// and namespace tools are checked field by field; the hosted tools only
// by type, since the engine never calls them.
var toolTypes = []string{"function", "custom", "namespace", "file_search", "computer", "computer_use_preview",
	"web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11", "mcp",
	"code_interpreter", "programmatic_tool_calling", "image_generation", "local_shell", "shell", "tool_search", "apply_patch"}

var functionToolFields = map[string]param{
	"type": {kinds: kString}, "name": {kinds: kString, required: true},
	"parameters": {kinds: kObject | kNull}, "strict": {kinds: kBool | kNull},
	"description": {kinds: kString | kNull}, "allowed_callers": {kinds: kArray | kNull},
	"async": {kinds: kBool}, "defer_loading": {kinds: kBool}, "output_schema": {kinds: kObject | kNull},
}

var customToolFields = map[string]param{
	"type": {kinds: kString}, "name": {kinds: kString, required: true},
	"description": {kinds: kString}, "format": {kinds: kObject, fields: customFormatFields},
	"allowed_callers": {kinds: kArray | kNull}, "async": {kinds: kBool}, "defer_loading": {kinds: kBool},
}

// Custom tool input formats (CustomToolInputFormat).
const (
	CustomFormatText    = "text"
	CustomFormatGrammar = "grammar"
	GrammarLark         = "lark"
	GrammarRegex        = "regex"
)

var customFormatFields = map[string]param{
	"type":       {kinds: kString, enum: []string{CustomFormatText, CustomFormatGrammar}, required: true},
	"syntax":     {kinds: kString, enum: []string{GrammarLark, GrammarRegex}},
	"definition": {kinds: kString},
}

var namespaceToolFields = map[string]param{
	"type": {kinds: kString}, "name": {kinds: kString, required: true},
	"description": {kinds: kString | kNull}, "tools": {kinds: kArray, required: true},
}

// Tool choice object types: the ones that name a tool of the request, and
// the hosted ones the SDK declares (ToolChoiceTypes, ToolChoiceMcp,
// ToolChoiceApplyPatch, ToolChoiceShell, programmatic tool calling).
var toolChoiceTypes = []string{"function", "custom", "allowed_tools", "file_search", "web_search_preview", "computer",
	"computer_use_preview", "computer_use", "web_search_preview_2025_03_11", "image_generation", "code_interpreter",
	"mcp", "apply_patch", "shell", "programmatic_tool_calling"}

// Content part types per message role. A user, system or developer
// message holds input parts (ResponseInputContent); an assistant message
// holds output parts (ResponseOutputMessage), or input text as the SDK's
// EasyInputMessage allows.
var (
	inputPartTypes     = []string{"input_text", "input_image", "input_file"}
	assistantPartTypes = []string{"output_text", "refusal", "input_text"}
)

// functionNameMax and the name rule: a tool's name is 1 to 64 letters,
// digits, underscores and hyphens.
const functionNameMax = 64
const functionNamePattern = "^[a-zA-Z0-9_-]+$"
