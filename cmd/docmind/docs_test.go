package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
)

// The reference pages hold generated blocks between <!-- BEGIN name ... --> and <!-- END name -->;
// these tests fail when a block and the code disagree, and -update rewrites the blocks.

// generatedBlock returns the page and the start and end offsets of the lines between the markers.
func generatedBlock(t *testing.T, page, name string) (string, int, int) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- BEGIN "+name)
	end := strings.Index(s, "<!-- END "+name+" -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s: no <!-- BEGIN %s --> ... <!-- END %s --> block", page, name, name)
	}
	start := begin + strings.Index(s[begin:], "\n") + 1
	return s, start, end
}

func checkBlock(t *testing.T, page, name, want string) {
	t.Helper()
	s, start, end := generatedBlock(t, page, name)
	if s[start:end] == want {
		return
	}
	if *update {
		if err := os.WriteFile(page, []byte(s[:start]+want+s[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the %s block differs from the code; run: go test ./cmd/docmind -run TestDocs -update\n--- page\n%s\n--- code\n%s", page, name, s[start:end], want)
}

// docs/configuration.md's table is `docmind config --vars`: every variable the code reads, with its
// key, default and meaning, and nothing else.
func TestDocsConfigurationTable(t *testing.T) {
	var want bytes.Buffer
	writeVarsTable(&want, config.Vars())
	checkBlock(t, filepath.Join("..", "..", "docs", "configuration.md"), "variables", want.String())
}

// docs/cli.md's synopsis is `docmind help`, and both name every command the dispatcher runs.
func TestDocsCLISynopsis(t *testing.T) {
	page := filepath.Join("..", "..", "docs", "cli.md")
	checkBlock(t, page, "usage", "```text\n"+usage+"```\n")
	b, _ := os.ReadFile(page)
	cmds := dispatchedCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in run's dispatcher: %v", len(cmds), cmds)
	}
	for _, c := range cmds {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(usage) {
			t.Errorf("the usage text does not list the command %q", c)
		}
		if !strings.Contains(string(b), "`docmind "+c) {
			t.Errorf("docs/cli.md has no row for `docmind %s ...`", c)
		}
		// every listed command is one the binary knows (not "unknown command")
		_, _, errOut := runCLI(t, nil, c, "-h")
		if strings.Contains(errOut, "unknown command") {
			t.Errorf("docmind %s: %s", c, errOut)
		}
	}
}

// dispatchedCommands reads the command names from the map literal in run (main.go), so a command added
// there without documentation fails TestDocsCLISynopsis.
func dispatchedCommands(t *testing.T) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "run" {
			return true
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if _, isMap := lit.Type.(*ast.MapType); !isMap {
				return true
			}
			for _, el := range lit.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if bl, ok := kv.Key.(*ast.BasicLit); ok {
						if name, err := strconv.Unquote(bl.Value); err == nil {
							out = append(out, name)
						}
					}
				}
			}
			return false
		})
		return false
	})
	return out
}
