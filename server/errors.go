package server

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// FieldError names one bad field of a request (docs/api.md's field errors).
type FieldError struct {
	Field      string `json:"field"`
	Constraint string `json:"constraint"`
	Message    string `json:"message"`
	Value      any    `json:"value,omitempty"`
}

// apiError is the one shape of every error that is not about the
// request's fields: OpenAI's, so that SDKs and the worker clients parse one form.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// Error codes shared by all families.
const (
	codeInvalidRequest   = "INVALID_REQUEST"
	codeQueueFull        = "QUEUE_FULL"
	codeNotReady         = "NOT_READY"
	codeDraining         = "DRAINING"
	codeUnauthorized     = "UNAUTHORIZED"
	codeTimeout          = "TIMEOUT"
	codeCancelled        = "CANCELLED"
	codeShutdown         = "SHUTDOWN"
	codeInference        = "INFERENCE_FAILED"
	codeConflict         = "JOB_EXISTS"
	codeNotFound         = "NOT_FOUND"
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	codeTooLarge         = "BODY_TOO_LARGE"
	codeMediaType        = "UNSUPPORTED_MEDIA_TYPE"
	codeGrammarDeadEnd   = "GRAMMAR_DEAD_END" // the request's grammar needs what the vocabulary cannot spell
)

// retryAfterSeconds is what a shed request is told to wait: one token
// budget of the tiny model is milliseconds, so a second is conservative
// without making clients idle for long.
const retryAfterSeconds = 1

// Header values of the pre-rendered refusals, shared by every answer
// (http.Server only reads them), so that writing one allocates nothing.
var (
	jsonContentType  = []string{"application/json"}
	retryAfterHeader = []string{strconv.Itoa(retryAfterSeconds)}
)

// queueFullBody is the 429 QUEUE_FULL answer's body, rendered once: a
// client ignoring Retry-After asks again at once, and its refusal must
// cost far less than the work it waits for (issue #43 row 8).
var queueFullBody = mustRender(http.StatusTooManyRequests, codeQueueFull, "all slots are busy and the queue is full; retry later")

// mustRender renders an error body as writeError writes it.
func mustRender(status int, code, message string) []byte {
	b, err := json.Marshal(map[string]apiError{"error": {Message: message, Type: errorType(status), Code: code}})
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	return append(b, '\n')
}

// writeRendered writes a refusal rendered by mustRender, with the
// Retry-After that writeError gives a 429 or 503.
func writeRendered(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Retry-After"] = retryAfterHeader
	setOutcome(w, outcomeForStatus(status))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusServiceUnavailable:
		return "service_unavailable"
	case status == http.StatusGatewayTimeout:
		return "timeout_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes {"error":{...}}; param names the field at fault, if one.
func writeError(w http.ResponseWriter, status int, code, message, param string) {
	e := apiError{Message: message, Type: errorType(status), Code: code}
	if param != "" {
		e.Param = &param
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	setOutcome(w, outcomeForStatus(status))
	writeJSON(w, status, map[string]any{"error": e})
}

// family selects the field error shape of a route: the worker and
// batch APIs list every field ({"errors":[...]}); the OpenAI API has one
// error object, whose message names every field.
type family int

const (
	familyWorker family = iota
	familyOpenAI
)

func writeFieldErrors(w http.ResponseWriter, fam family, errs []FieldError) {
	setOutcome(w, outcomeClientError)
	if fam == familyWorker {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": errs})
		return
	}
	msg := ""
	for i, e := range errs {
		if i > 0 {
			msg += "; "
		}
		msg += e.Field + ": " + e.Message
	}
	writeError(w, http.StatusBadRequest, codeInvalidRequest, msg, errs[0].Field)
}

// writeRequestError writes a body-level failure of decodeBody.
func writeRequestError(w http.ResponseWriter, fam family, re *requestError) {
	if len(re.fields) > 0 {
		writeFieldErrors(w, fam, re.fields)
		return
	}
	if re.status == http.StatusBadRequest {
		writeFieldErrors(w, fam, []FieldError{{Field: "body", Constraint: re.constraint, Message: re.message}})
		return
	}
	writeError(w, re.status, re.code, re.message, "")
}

func itoa(n int) string { return strconv.Itoa(n) }
