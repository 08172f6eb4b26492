package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// maxConfigFile bounds the optional config file.
const maxConfigFile = 1 << 20

// Load builds the effective config: Default, then the JSON file at path (if path is not empty), then every
// DOCMIND_* variable that getenv returns non-empty. It reports every problem of the file and the variables
// at once, then Validate's. getenv is a parameter so tests can pass a map.
func Load(path string, getenv func(string) string) (Config, error) {
	c := Default()
	var problems []string
	if path != "" {
		if err := c.overlayFile(path); err != nil {
			problems = append(problems, err.Error())
		}
	}
	problems = append(problems, c.overlayEnv(getenv)...)
	if len(problems) > 0 {
		return c, &ValidationError{Problems: problems}
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// overlayFile decodes a JSON file strictly: unknown fields are errors, so a typo never passes silently.
func (c *Config) overlayFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return fmt.Errorf("config file %s: %v", path, err)
	}
	if len(data) > maxConfigFile {
		return fmt.Errorf("config file %s: larger than %d bytes", path, maxConfigFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config file %s: %v", path, err)
	}
	if dec.More() {
		return fmt.Errorf("config file %s: trailing data after the JSON object", path)
	}
	return nil
}

// Var describes one configuration variable.
type Var struct {
	Env     string `json:"env"`
	Key     string `json:"key"` // dotted JSON path in the config file
	Type    string `json:"type"`
	Default string `json:"default"`
	Secret  bool   `json:"secret,omitempty"`
	Doc     string `json:"doc"`
}

// Vars lists every variable with its default, in declaration order.
func Vars() []Var {
	var out []Var
	walk(reflect.ValueOf(Default()), "", func(f reflect.StructField, v reflect.Value, key string) {
		out = append(out, Var{
			Env: f.Tag.Get("env"), Key: key, Type: typeName(v), Default: format(v),
			Secret: f.Tag.Get("secret") == "true", Doc: f.Tag.Get("doc"),
		})
	})
	return out
}

// Redacted returns the config as ordered (key, value) pairs with secrets replaced by "[redacted]" (or ""
// when unset, so an operator can still see whether a secret is configured).
func (c Config) Redacted() map[string]any {
	out := map[string]any{}
	walk(reflect.ValueOf(c), "", func(f reflect.StructField, v reflect.Value, key string) {
		val := any(v.Interface())
		if d, ok := val.(time.Duration); ok {
			val = d.String()
		}
		if f.Tag.Get("secret") == "true" {
			if v.String() != "" {
				val = "[redacted]"
			} else {
				val = ""
			}
		}
		out[key] = val
	})
	return out
}

func (c *Config) overlayEnv(getenv func(string) string) []string {
	var problems []string
	walk(reflect.ValueOf(c).Elem(), "", func(f reflect.StructField, v reflect.Value, _ string) {
		name := f.Tag.Get("env")
		raw := getenv(name)
		if name == "" || raw == "" {
			return
		}
		if err := set(v, raw); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
		}
	})
	return problems
}

// walk calls fn for every leaf field (one with an env tag) of the struct value v, depth first.
func walk(v reflect.Value, prefix string, fn func(reflect.StructField, reflect.Value, string)) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := strings.Split(f.Tag.Get("json"), ",")[0]
		if prefix != "" {
			key = prefix + "." + key
		}
		fv := v.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Duration(0)) {
			walk(fv, key, fn)
			continue
		}
		if f.Tag.Get("env") != "" {
			fn(f, fv, key)
		}
	}
}

func set(v reflect.Value, raw string) error {
	switch v.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 30s, 4m)", raw)
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", raw)
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", raw)
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", raw)
		}
		v.SetBool(b)
	default:
		return fmt.Errorf("unsupported field type %s", v.Type())
	}
	return nil
}

func typeName(v reflect.Value) string {
	if _, ok := v.Interface().(time.Duration); ok {
		return "duration"
	}
	return v.Kind().String()
}

func format(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(v.Interface())
}
