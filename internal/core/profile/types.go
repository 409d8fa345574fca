package profile

import (
	"bytes"
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

// fill sets rv, of the type checkTypes checked v against, from v: what
// encoding/json would decode data (v's input) into, for a profile that
// checkShape and checkTypes passed, without encoding/json's first use of
// the Profile type, which was half the cost of a one-shot call's Parse
// (docs/benchmarks.md, "Seventh pass"). FuzzParse compares the two.
func fill(v *strictjson.Value, data []byte, rv reflect.Value) {
	t := rv.Type()
	if t == rawMessage {
		rv.SetBytes(bytes.Clone(data[v.Start:v.End]))
		return
	}
	if t.Kind() == reflect.Pointer {
		rv.Set(reflect.New(t.Elem()))
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		rv.SetString(v.Text)
	case reflect.Bool:
		rv.SetBool(v.Bool)
	case reflect.Int, reflect.Int64:
		n, _ := strconv.ParseInt(v.Text, 10, rv.Type().Bits()) // checked
		rv.SetInt(n)
	case reflect.Slice:
		rv.Set(reflect.MakeSlice(rv.Type(), len(v.Items), len(v.Items)))
		for i, it := range v.Items {
			fill(it, data, rv.Index(i))
		}
	case reflect.Map:
		rv.Set(reflect.MakeMapWithSize(rv.Type(), len(v.Members)))
		for _, m := range v.Members {
			e := reflect.New(rv.Type().Elem()).Elem()
			fill(m.Value, data, e)
			rv.SetMapIndex(reflect.ValueOf(m.Name), e)
		}
	case reflect.Struct:
		for _, m := range v.Members {
			if f, ok := fieldByJSONName(rv.Type(), m.Name); ok {
				fill(m.Value, data, rv.FieldByIndex(f.Index))
			}
		}
	}
}

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
