package chunk

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

var (
	versionRe = regexp.MustCompile(`(?i)(version|版本|版本号|ver\.?)\s*[:：]?\s*v?(\d+(?:\.\d+){1,3})`)
	dateRe    = regexp.MustCompile(`(?i)(生效日期|生效时间|施行日期|effective(\s+date)?|发布日期)\s*[:：]?\s*(\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}\s*日?)`)
	digitsRe  = regexp.MustCompile(`\d+`)
)

// frontMatter removes a leading YAML front matter block and returns its simple "key: value" pairs
// (lower-cased keys, unquoted values). Nested YAML is not interpreted.
func frontMatter(md string) (string, map[string]string) {
	out := map[string]string{}
	if !strings.HasPrefix(md, "---\n") {
		return md, out
	}
	end := strings.Index(md[4:], "\n---")
	if end < 0 {
		return md, out
	}
	block := md[4 : 4+end]
	rest := md[4+end+4:]
	for _, line := range strings.Split(block, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		out[k] = v
	}
	if d, ok := out["effective_date"]; ok {
		out["effective_date"] = normDate(d)
	}
	if d, ok := out["date"]; ok {
		out["date"] = normDate(d)
	}
	return rest, out
}

// normDate turns "2024年5月1日", "2024/05/01" or "2024-5-1" into "2024-05-01"; anything else is kept.
func normDate(s string) string {
	d := digitsRe.FindAllString(s, -1)
	if len(d) < 3 || len(d[0]) != 4 {
		return strings.TrimSpace(s)
	}
	pad := func(x string) string {
		if len(x) == 1 {
			return "0" + x
		}
		return x
	}
	return d[0] + "-" + pad(d[1]) + "-" + pad(d[2])
}

func tagList(v string) []string {
	v = strings.Trim(strings.TrimSpace(v), "[]")
	if v == "" {
		return nil
	}
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = cleanTag(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// cleanTag makes a heading usable as a tag: quote marks and control characters dropped, white space
// collapsed, at most 64 bytes cut at a character boundary.
func cleanTag(s string) string {
	t := s
	if !plainTag(s) {
		var b strings.Builder
		for _, r := range s {
			if unicode.In(r, unicode.Pi, unicode.Pf) || strings.ContainsRune("\"'`\\\uFF02\uFF07\u201E\u201A", r) || unicode.IsControl(r) || r == 0xFFFD {
				continue
			}
			b.WriteRune(r)
		}
		t = strings.Join(strings.Fields(b.String()), " ")
	}
	if len(t) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = strings.TrimSpace(t[:cut])
	}
	if rag.ValidateTag(t) != nil {
		return ""
	}
	return t
}

// plainTag reports a heading that cleaning leaves as it is (but for its length): printable ASCII
// without quote marks or backslashes and CJK ideographs (U+4000-U+9FFF: no quote, control or space
// among them), words separated by single spaces. Most headings are; the general path's rune loop,
// Fields and Join were most of the cost of reading a heading.
func plainTag(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0xE4 && c <= 0xE9 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80:
			i += 2
		case c < 0x20, c >= 0x7f, c == '"', c == '\'', c == '`', c == '\\':
			return false
		case c == ' ' && s[i+1] == ' ': // s does not end in a space
			return false
		}
	}
	return true
}

var typeWords = []struct {
	kind  string
	words []string
}{
	{rag.ContentWarning, []string{"注意", "警告", "警示", "危险", "禁止", "免责", "warning", "caution", "danger", "important", "do not"}},
	{rag.ContentProcedure, []string{"步骤", "流程", "操作", "安装", "配置", "如何", "办理", "procedure", "steps", "how to", "install", "setup", "set up", "getting started"}},
	{rag.ContentExample, []string{"示例", "例子", "样例", "案例", "example", "sample", "demo"}},
	{rag.ContentDefinition, []string{"定义", "术语", "名词解释", "释义", "definition", "glossary", "terminology", "terms"}},
}
