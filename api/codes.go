package api

// The error codes agentloop sends in an error's "code" field. Clients match
// on them (rollout's recovery does), so each is written once, here, and
// every producer and every matcher uses the constant. docs/protocol.md
// lists which of them OpenAI's API also sends and which are agentloop's own.
const (
	// Request validation: OpenAI's codes.
	CodeInvalidValue              = "invalid_value"
	CodeInvalidType               = "invalid_type"
	CodeInvalidJSON               = "invalid_json"
	CodeMissingRequiredParameter  = "missing_required_parameter"
	CodeUnknownParameter          = "unknown_parameter"
	CodeUnsupportedParameter      = "unsupported_parameter"
	CodeIntegerBelowMinValue      = "integer_below_min_value"
	CodeIntegerAboveMaxValue      = "integer_above_max_value"
	CodeIntegerOutOfRange         = "integer_out_of_range"
	CodeInvalidFunctionParameters = "invalid_function_parameters"
	CodeInvalidJSONSchema         = "invalid_json_schema"
	CodeStringAboveMaxLength      = "string_above_max_length"
	CodeStringBelowMinLength      = "string_below_min_length"
	CodeArrayBelowMinLength       = "array_below_min_length"
	CodeArrayAboveMaxLength       = "array_above_max_length"
	CodeInvalidEncryptedContent   = "invalid_encrypted_content"
	CodeContextLengthExceeded     = "context_length_exceeded"
	CodeModelNotFound             = "model_not_found"
	CodePreviousResponseNotFound  = "previous_response_not_found"
	CodeInvalidAPIKey             = "invalid_api_key"
	CodeRateLimitExceeded         = "rate_limit_exceeded"
	CodeServerError               = "server_error"

	// WebSocket mode.
	CodeWebSocketConnectionLimitReached = "websocket_connection_limit_reached"
	CodeWebSocketStreamLimitReached     = "websocket_stream_limit_reached"
	CodeWebSocketQueueFull              = "websocket_queue_full"
	CodeWebSocketUpgradeRequired        = "websocket_upgrade_required"
	CodeWebSocketUpgradeRefused         = "websocket_upgrade_refused"
	CodeInvalidMessage                  = "invalid_message"
	CodeInvalidStreamID                 = "invalid_stream_id"

	// The transport and the process: agentloop's own.
	CodeInvalidBody          = "invalid_body"
	CodeRequestTimeout       = "request_timeout"
	CodeRequestTooLarge      = "request_too_large"
	CodeServerBusy           = "server_busy"
	CodeClientClosed         = "client_closed"
	CodeCrossSiteRequest     = "cross_site_request"
	CodeHostNotAllowed       = "host_not_allowed"
	CodeUnsupportedMediaType = "unsupported_media_type"

	// The playground's run and drill API: agentloop's own.
	CodeNotFound      = "not_found"
	CodeRunRunning    = "run_running"
	CodeRunNotRunning = "run_not_running"
	CodeTooManyRaces  = "too_many_races"
	CodeTooManyDrills = "too_many_drills"
	// CodeInvalidCancelToken: a run is cancelled or deleted by whoever
	// started it (its cancel token) or with the server's key.
	CodeInvalidCancelToken = "invalid_cancel_token"
	CodeWorkloadInUse      = "workload_in_use"
)
