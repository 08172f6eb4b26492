package fakemilvus

import "testing"

func TestExpr(t *testing.T) {
	row := map[string]any{"tenant": "t1", "kb_id": "kb1", "tags": []string{"a", "保险"}}
	cases := []struct {
		expr string
		want bool
	}{
		{`tenant == "t1"`, true},
		{`tenant != "t1"`, false},
		{`tenant == "t1" and kb_id in ["kb2", "kb1"]`, true},
		{`tenant == "t2" or kb_id in ["kb1"]`, true},
		{`tenant == "t2" and (kb_id in ["kb1"] or tenant == "t1")`, false},
		{`array_contains_any(tags, ["x", "保险"])`, true},
		{`array_contains(tags, "b")`, false},
		{`kb_id in []`, false},
	}
	for _, c := range cases {
		p, err := parseExpr(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got, err := p.eval(row); err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{`tenant = "t1"`, `tenant == t1`, `tenant == "t1" and`, `"a\"b"`, `tenant like "x%"`, `tenant == "t1")`} {
		if _, err := parseExpr(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
	if p, _ := parseExpr(`missing == "x"`); p != nil {
		if _, err := p.eval(row); err == nil {
			t.Error("unknown field evaluated without error")
		}
	}
}
