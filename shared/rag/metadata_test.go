package rag

import (
	"strings"
	"testing"
)

func TestMetaFilterMatch(t *testing.T) {
	doc := Metadata{"source": "confluence", "year": 2025.0, "labels": []string{"policy", "hr"},
		"modified": "2025-03-14T10:00:00Z", "effective": "2025-01-01", "author": "ann"}
	cases := []struct {
		filter string
		want   bool
	}{
		{`{"key":"source","eq":"confluence"}`, true},
		{`{"key":"source","eq":"web"}`, false},
		{`{"key":"year","eq":2025}`, true},
		{`{"key":"year","eq":"2025"}`, false}, // a string is not the number
		{`{"key":"labels","eq":"hr"}`, true},
		{`{"key":"labels","in":["legal","policy"]}`, true},
		{`{"key":"author","in":["bob","cy"]}`, false},
		{`{"key":"year","gte":2025,"lt":2026}`, true},
		{`{"key":"year","gt":2025}`, false},
		{`{"key":"year","lte":2025}`, true},
		{`{"key":"modified","gte":"2025-03-01","lt":"2025-04-01"}`, true},
		{`{"key":"modified","gte":"2025-03-15"}`, false},
		{`{"key":"effective","lt":"2025-01-01T00:00:01Z"}`, true},
		{`{"key":"author","gte":"2025-01-01"}`, false}, // not a date: no match
		{`{"key":"year","gte":"2025-01-01"}`, false},   // a number is not a date
		{`{"key":"author","exists":true}`, true},
		{`{"key":"missing","exists":false}`, true},
		{`{"key":"missing","eq":"x"}`, false},
		{`{"not":{"key":"missing","eq":"x"}}`, true},
		{`{"and":[{"key":"source","eq":"confluence"},{"key":"labels","eq":"policy"}]}`, true},
		{`{"and":[{"key":"source","eq":"confluence"},{"key":"labels","eq":"legal"}]}`, false},
		{`{"or":[{"key":"source","eq":"web"},{"key":"author","eq":"ann"}]}`, true},
	}
	for _, c := range cases {
		f, err := ParseMetaFilter([]byte(c.filter))
		if err != nil {
			t.Errorf("ParseMetaFilter(%s): %v", c.filter, err)
			continue
		}
		if got := f.Match(doc); got != c.want {
			t.Errorf("%s matched %v; want %v", c.filter, got, c.want)
		}
	}
	var none *MetaFilter
	if !none.Match(doc) {
		t.Error("a nil filter refused a document")
	}
}

func TestParseMetaFilterRefusesBadForms(t *testing.T) {
	deep := strings.Repeat(`{"not":`, 9) + `{"key":"a","exists":true}` + strings.Repeat(`}`, 9)
	for _, bad := range []string{
		`[]`, `"x"`, `{}`, `{"key":"a"}`, `{"key":"a b","eq":"x"}`, `{"key":"a","eq":"x","in":["y"]}`,
		`{"key":"a","eq":true}`, `{"key":"a","eq":null}`, `{"key":"a","in":[]}`, `{"key":"a","gte":"soon"}`,
		`{"key":"a","gte":1,"lt":"2025-01-01"}`, `{"key":"a","gt":1,"gte":2}`, `{"key":"a","gte":1,"eq":1}`,
		`{"and":[]}`, `{"and":[{"key":"a","exists":true}],"key":"b"}`, `{"not":{"key":"a","exists":"yes"}}`,
		`{"key":"a","like":"x%"}`, deep,
	} {
		if _, err := ParseMetaFilter([]byte(bad)); !Is(err, KindInvalid) {
			t.Errorf("ParseMetaFilter(%s) = %v; want Invalid", bad, err)
		}
	}
	if f, err := ParseMetaFilter([]byte(" null ")); f != nil || err != nil {
		t.Errorf("null filter = %v, %v; want none", f, err)
	}
}

func TestMetadataNormalize(t *testing.T) {
	m, err := Metadata{"year": 2025, "labels": []any{"a", "b"}, "title": "x", "gone": nil, "none": []string(nil)}.Normalize()
	if _, has := m["gone"]; err != nil || m["year"] != 2025.0 || len(m["labels"].([]string)) != 2 || has || m["none"] == nil {
		t.Fatalf("Normalize = %v, %v", m, err)
	}
	_, err = Metadata{"bad key": "x", "obj": map[string]any{}, "mixed": []any{"a", 1.0}}.Normalize()
	if !Is(err, KindInvalid) || !strings.Contains(err.Error(), "bad key") || !strings.Contains(err.Error(), "obj") || !strings.Contains(err.Error(), "mixed") {
		t.Fatalf("bad metadata = %v; want every problem named", err)
	}
}

func TestMetaFilterKeys(t *testing.T) {
	f, err := ParseMetaFilter([]byte(`{"and":[{"key":"year","gte":2024},{"or":[{"key":"team","eq":"hr"},{"not":{"key":"year","exists":true}}]},{"key":"a.b","in":["x"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Keys(), ","); got != "a.b,team,year" {
		t.Fatalf("Keys() = %q; want a.b,team,year (sorted, once each)", got)
	}
	if (*MetaFilter)(nil).Keys() != nil {
		t.Fatal("no filter names keys")
	}
}
