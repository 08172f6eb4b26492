package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// An error body is read by the caller, who knows the request's JSON, not docmind's Go code: these
// helpers put a decoding failure in terms of the body's fields and JSON types, and take the Go operation
// names ("auth.Verify: ") out of a message that is passed through.

// jsonProblem describes why a request body did not decode, naming the field and the JSON types involved.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends in the middle of a JSON value"
	case errors.As(err, &syn):
		return fmt.Sprintf("the body is not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("the body must be a JSON %s, not %s", jsonKind(typ.Type), article(typ.Value))
		}
		return fmt.Sprintf("field %q must be %s, not %s", typ.Field, withArticle(jsonKind(typ.Type)), article(typ.Value))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return "unknown field " + f
	}
	if strings.Contains(msg, "Go ") || strings.Contains(msg, "json") {
		return "the body does not match the expected JSON"
	}
	return msg
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "value"
}

// article puts "a"/"an" before a JSON value kind as encoding/json reports it ("array", "number 5", ...).
func article(v string) string {
	if v == "" {
		return "that value"
	}
	return withArticle(v)
}

func withArticle(s string) string {
	if s == "value" {
		return "a value"
	}
	if strings.ContainsAny(s[:1], "aeiou") {
		return "an " + s
	}
	return "a " + s
}

// callerText is err's text without the operation names of the classified errors it wraps: those name
// Go functions ("auth.Verify: token expired" reads "token expired").
func callerText(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if re, ok := e.(*rag.Error); ok && re.Op != "" {
			msg = strings.ReplaceAll(msg, re.Op+": ", "")
		}
	}
	return strings.ReplaceAll(msg, "json: ", "")
}
