package fakemilvus

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// predicate is a parsed boolean expression over a row's fields.
type predicate interface {
	eval(fields map[string]any) (bool, error)
}

type andExpr struct{ l, r predicate }
type orExpr struct{ l, r predicate }
type cmpExpr struct {
	field string
	neg   bool
	value string
}
type ordExpr struct {
	field, op, value string
}
type inExpr struct {
	field  string
	values []string
}
type containsExpr struct {
	field  string
	any    bool
	values []string
}

func (e andExpr) eval(f map[string]any) (bool, error) {
	l, err := e.l.eval(f)
	if err != nil || !l {
		return false, err
	}
	return e.r.eval(f)
}

func (e orExpr) eval(f map[string]any) (bool, error) {
	l, err := e.l.eval(f)
	if err != nil || l {
		return l, err
	}
	return e.r.eval(f)
}

func str(f map[string]any, field string) (string, error) {
	v, ok := f[field]
	if !ok {
		return "", fmt.Errorf("field %s does not exist", field)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("field %s is not a string", field)
	}
	return s, nil
}

func (e cmpExpr) eval(f map[string]any) (bool, error) {
	s, err := str(f, e.field)
	return (s == e.value) != e.neg, err
}

func (e ordExpr) eval(f map[string]any) (bool, error) {
	s, err := str(f, e.field)
	c := strings.Compare(s, e.value)
	switch e.op {
	case ">":
		return c > 0, err
	case ">=":
		return c >= 0, err
	case "<":
		return c < 0, err
	}
	return c <= 0, err
}

func (e inExpr) eval(f map[string]any) (bool, error) {
	s, err := str(f, e.field)
	return slices.Contains(e.values, s), err
}

func (e containsExpr) eval(f map[string]any) (bool, error) {
	arr, ok := f[e.field].([]string)
	if !ok {
		return false, fmt.Errorf("field %s is not an array", e.field)
	}
	for _, v := range e.values {
		if slices.Contains(arr, v) {
			return true, nil
		}
	}
	return false, nil
}

type parser struct {
	toks []string
	pos  int
}

func parseExpr(s string) (predicate, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return e, nil
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string { t := p.peek(); p.pos++; return t }

func (p *parser) expect(t string) error {
	if got := p.next(); !strings.EqualFold(got, t) {
		return fmt.Errorf("want %q, got %q", t, got)
	}
	return nil
}

func (p *parser) or() (predicate, error) {
	l, err := p.and()
	for err == nil && (strings.EqualFold(p.peek(), "or") || p.peek() == "||") {
		p.next()
		var r predicate
		r, err = p.and()
		l = orExpr{l, r}
	}
	return l, err
}

func (p *parser) and() (predicate, error) {
	l, err := p.atom()
	for err == nil && (strings.EqualFold(p.peek(), "and") || p.peek() == "&&") {
		p.next()
		var r predicate
		r, err = p.atom()
		l = andExpr{l, r}
	}
	return l, err
}

func isIdent(t string) bool {
	if t == "" {
		return false
	}
	for i, r := range t {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

func (p *parser) atom() (predicate, error) {
	t := p.next()
	switch {
	case t == "(":
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case t == "array_contains_any" || t == "array_contains":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		field := p.next()
		if !isIdent(field) {
			return nil, fmt.Errorf("bad field %q", field)
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		var vals []string
		if t == "array_contains" {
			v, err := p.str()
			if err != nil {
				return nil, err
			}
			vals = []string{v}
		} else {
			var err error
			if vals, err = p.list(); err != nil {
				return nil, err
			}
		}
		return containsExpr{field: field, any: true, values: vals}, p.expect(")")
	case isIdent(t):
		op := p.next()
		switch strings.ToLower(op) {
		case "==", "!=":
			v, err := p.str()
			return cmpExpr{field: t, neg: op == "!=", value: v}, err
		case "in":
			vals, err := p.list()
			return inExpr{field: t, values: vals}, err
		case ">", ">=", "<", "<=": // string order, as Milvus compares varchar (ListVectors pages by id > last)
			v, err := p.str()
			return ordExpr{field: t, op: op, value: v}, err
		}
		return nil, fmt.Errorf("unsupported operator %q", op)
	}
	return nil, fmt.Errorf("unexpected %q", t)
}

func (p *parser) str() (string, error) {
	t := p.next()
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", fmt.Errorf("want a string literal, got %q", t)
	}
	return t[1 : len(t)-1], nil
}

func (p *parser) list() ([]string, error) {
	if err := p.expect("["); err != nil {
		return nil, err
	}
	var out []string
	for p.peek() != "]" {
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.peek() == "," {
			p.next()
		} else if p.peek() != "]" {
			return nil, fmt.Errorf("want , or ] in a list, got %q", p.peek())
		}
	}
	p.next()
	return out, nil
}

// tokenize splits an expression; string literals keep their quotes and may not contain quotes or
// backslashes (docmind never emits them: its values are validated ids and tags).
func tokenize(s string) ([]string, error) {
	var toks []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' {
					return nil, fmt.Errorf("escapes in string literals are not supported by the fake")
				}
				j++
			}
			if j == len(rs) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, string(rs[i:j+1]))
			i = j + 1
		case strings.ContainsRune("()[],", r):
			toks = append(toks, string(r))
			i++
		case r == '>' || r == '<':
			if i+1 < len(rs) && rs[i+1] == '=' {
				toks = append(toks, string(rs[i:i+2]))
				i += 2
			} else {
				toks = append(toks, string(r))
				i++
			}
		case r == '=' || r == '!' || r == '&' || r == '|':
			if i+1 < len(rs) && (rs[i+1] == '=' || rs[i+1] == r) {
				toks = append(toks, string(rs[i:i+2]))
				i += 2
			} else {
				return nil, fmt.Errorf("bad operator at %d", i)
			}
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", r)
		}
	}
	return toks, nil
}
