package text

import (
	"slices"
	"testing"
)

func TestAnalyze(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"The patients' outcomes were improving", []string{"patient", "outcom", "were", "improv"}},
		{"Aspirin's effect on MYOCARDIAL infarction", []string{"aspirin", "effect", "myocardi", "infarct"}},
		{"Qwen2.5 and server.shutdown in v1.2.3", []string{"qwen2.5", "qwen2", "5", "server.shutdown", "server", "shutdown", "v1.2.3", "v1", "2", "3"}},
		{"costs ¥0.008 over HTTP/2", []string{"cost", "¥0.008", "0", "008", "over", "http/2", "http", "2"}},
		{"投保年龄", []string{"投保", "保年", "年龄"}},
		{"年龄 65 岁", []string{"年龄", "65", "岁"}},
		{"ＡＢＣ１２３　全角", []string{"abc123", "全角"}},
		{"don't stop -- (end).", []string{"don", "t", "stop", "end"}},
		{"long-term IL-6 levels", []string{"long", "term", "il", "6", "level"}},
		{"", nil},
	}
	for _, c := range cases {
		if got := Analyze(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Analyze(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
