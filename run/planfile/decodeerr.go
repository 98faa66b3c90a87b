package planfile

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// A value of the wrong type is not a toml.ParseError: the decoder says it
// as "toml: line N (last key "K"): incompatible types: TOML value has
// type T; destination has type D", which decodeError rewords.
var badTypeRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)$`)

// phaseTableRE is a [phase] header: a table where phases are an array.
var phaseTableRE = regexp.MustCompile(`^\s*\[\s*phase\s*\]\s*(#.*)?$`)

// decodeError is the decoder's error err for the file path (contents b)
// as "FILE:LINE: what is wrong". A [phase] header, which the decoder
// reports as a type mismatch or a key defined twice, is named as such.
func decodeError(path string, b []byte, err error) error {
	for i, line := range strings.Split(string(b), "\n") {
		if phaseTableRE.MatchString(line) {
			return &Error{path, i + 1, "[phase] is a table; phases are [[phase]] (an array of tables, one [[phase]] header each)"}
		}
	}
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{path, pe.Position.Line, pe.Message}
	}
	if m := badTypeRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{path, line, fmt.Sprintf("%s: want %s, not %s", m[2], goTypeWord(m[4]), goTypeWord(m[3]))}
	}
	return &Error{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// goTypeWord names a Go type of the decoder's messages in TOML's words.
func goTypeWord(t string) string {
	switch {
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "slice", strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "map", t == "struct", strings.HasPrefix(t, "map["):
		return "a table"
	case strings.Contains(t, "time"):
		return "a date"
	}
	return t
}

// scalar is a TOML string, number or boolean as a string (false: v is
// none of them).
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// tomlType names a decoded TOML value's type.
func tomlType(v any) string {
	switch v.(type) {
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return goTypeWord(fmt.Sprintf("%T", v))
}
