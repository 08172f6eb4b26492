package web

import (
	"bufio"
	"regexp"
	"strings"
)

// robots is the part of a robots.txt that applies to docmind: the rules of the group naming our
// agent, or of "*" when none does (RFC 9309), and every Sitemap line.
type robots struct {
	rules    []rule
	sitemaps []string
}

type rule struct {
	allow bool
	path  string
}

// parseRobots reads robots.txt for agent (matched case-insensitively as a prefix of the group's
// product token, as RFC 9309 says).
func parseRobots(body, agent string) robots {
	var r robots
	type group struct {
		agents []string
		rules  []rule
	}
	var groups []group
	var cur *group
	inAgents := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		switch key {
		case "user-agent":
			if !inAgents {
				groups = append(groups, group{})
				cur = &groups[len(groups)-1]
			}
			cur.agents = append(cur.agents, strings.ToLower(val))
			inAgents = true
		case "allow", "disallow":
			inAgents = false
			if cur != nil && (val != "" || key == "allow") {
				cur.rules = append(cur.rules, rule{allow: key == "allow", path: val})
			}
		case "sitemap":
			r.sitemaps = append(r.sitemaps, val)
		default:
			inAgents = false
		}
	}
	agent = strings.ToLower(agent)
	var star *group
	for i := range groups {
		for _, a := range groups[i].agents {
			if a == "*" {
				star = &groups[i]
			} else if a != "" && strings.HasPrefix(agent, a) {
				r.rules = append(r.rules, groups[i].rules...)
			}
		}
	}
	if len(r.rules) == 0 && star != nil {
		r.rules = star.rules
	}
	return r
}

// allowed applies the longest matching rule (Allow wins a tie); a path no rule matches is allowed.
// "*" matches any run of characters and a trailing "$" anchors the end.
func (r robots) allowed(path string) bool {
	best, allow := -1, true
	for _, ru := range r.rules {
		if ru.path == "" {
			continue
		}
		if match(ru.path, path) && (len(ru.path) > best || len(ru.path) == best && ru.allow) {
			best, allow = len(ru.path), ru.allow
		}
	}
	return allow
}

// match reports whether a robots.txt path pattern matches path from its start.
func match(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	expr := "^" + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSuffix(pattern, "$")), `\*`, ".*")
	if anchored {
		expr += "$"
	}
	re, err := regexp.Compile(expr)
	return err == nil && re.MatchString(path)
}
