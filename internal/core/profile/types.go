package profile

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// checkTypes reports every value of the parsed profile v whose JSON type
// is not the one the Profile field it decodes into takes, at its JSON
// pointer and in words ("/tasks/agent/deadlineMs: expected an integer
// number of milliseconds"), as encoding/json would only say of the first
// one, in Go's terms and without its map keys. Member names are checked
// by checkShape first; what checkShape passes and checkTypes accepts
// decodes.
func checkTypes(v *strictjson.Value, at string, t reflect.Type, field string) Errors {
	if t == rawMessage {
		return nil // another validator's (wrappers: the descriptor's)
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fail := Errors{{Path: at, Message: "expected " + expected(t, field)}}
	switch t.Kind() {
	case reflect.String:
		if v.Kind != strictjson.String {
			return fail
		}
	case reflect.Bool:
		if v.Kind != strictjson.Bool {
			return fail
		}
	case reflect.Int, reflect.Int64:
		if v.Kind != strictjson.Number {
			return fail
		}
		if _, err := strconv.ParseInt(v.Text, 10, t.Bits()); err != nil {
			return fail // a fraction, an exponent, or out of range
		}
	case reflect.Slice:
		if v.Kind != strictjson.Array {
			return fail
		}
		var errs Errors
		for i, it := range v.Items {
			errs = append(errs, checkTypes(it, strictjson.AppendPointer(at, strconv.Itoa(i)), t.Elem(), field)...)
		}
		return errs
	case reflect.Map:
		if v.Kind != strictjson.Object {
			return fail
		}
		var errs Errors
		for _, m := range v.Members {
			errs = append(errs, checkTypes(m.Value, strictjson.AppendPointer(at, m.Name), t.Elem(), m.Name)...)
		}
		return errs
	case reflect.Struct:
		if v.Kind != strictjson.Object {
			return fail
		}
		var errs Errors
		for _, m := range v.Members {
			if f, ok := fieldByJSONName(t, m.Name); ok {
				errs = append(errs, checkTypes(m.Value, strictjson.AppendPointer(at, m.Name), f.Type, m.Name)...)
			}
		}
		return errs
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// fieldByJSONName is the field of struct t that the member name decodes
// into (names are exact: checkShape refused any other spelling).
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// expected says in words what a value of t, the value of member field,
// must be.
func expected(t reflect.Type, field string) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		for suffix, unit := range map[string]string{"Ms": "milliseconds", "Seconds": "seconds", "Bytes": "bytes"} {
			if strings.HasSuffix(field, suffix) {
				return "an integer number of " + unit
			}
		}
		return "an integer"
	case reflect.Slice:
		switch {
		case t.Elem() == rawMessage:
			return "an array"
		case t.Elem().Kind() == reflect.String:
			return "an array of strings"
		}
		return "an array of objects"
	}
	return "an object"
}
