package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// MCPServer is one MCP server whose tools the agentic loop may call (an element of
// DOCMIND_MCP_SERVERS; mcpclient connects to it).
type MCPServer struct {
	// Name prefixes its tools for the model ("<name>__<tool>"): 1 to 20 letters, digits, - and _.
	Name string `json:"name"`
	// URL is a Streamable HTTP endpoint (reached through the hardened outbound client); Command runs a
	// local server over stdio instead.
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
	// Headers are sent with every request to URL; a value "env:NAME" is read from the environment when
	// the server is first called, so that a credential can stay out of the JSON.
	Headers map[string]string `json:"headers,omitempty"`
	// Tools are the tool names the agent may call; required, since a server may add tools at any time.
	Tools []string `json:"tools"`
}

var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,20}$`)

// ParseMCPServers reads DOCMIND_MCP_SERVERS, a JSON array; empty is none. It reports every problem.
func ParseMCPServers(s string) ([]MCPServer, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var servers []MCPServer
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&servers); err != nil {
		return nil, fmt.Errorf("DOCMIND_MCP_SERVERS: must be a JSON array of {name, url or command, headers, tools}: %v", err)
	}
	var problems []string
	seen := map[string]bool{}
	for i, c := range servers {
		switch {
		case !mcpServerName.MatchString(c.Name):
			problems = append(problems, fmt.Sprintf("server %d: name %q must be 1 to 20 letters, digits, - or _", i, c.Name))
		case seen[c.Name]:
			problems = append(problems, fmt.Sprintf("server %q is named twice", c.Name))
		case (c.URL == "") == (len(c.Command) == 0):
			problems = append(problems, fmt.Sprintf("server %q: give exactly one of url and command", c.Name))
		case c.URL != "" && !strings.HasPrefix(c.URL, "https://") && !strings.HasPrefix(c.URL, "http://"):
			problems = append(problems, fmt.Sprintf("server %q: url must be http(s)", c.Name))
		case len(c.Tools) == 0:
			problems = append(problems, fmt.Sprintf("server %q: list the tools the agent may call", c.Name))
		}
		seen[c.Name] = true
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("DOCMIND_MCP_SERVERS: %s", strings.Join(problems, "; "))
	}
	return servers, nil
}
