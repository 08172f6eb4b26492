// Package infra holds the deployment artefacts' checks: template.yaml parsed strictly by goformation
// (the JS cfn-lint misjudges SAM), and the wiring between the template, the functions and the Makefile.
package infra

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"
)

func TestTemplateParsesStrictly(t *testing.T) {
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	q, ok := fns["QueryFunction"]
	if !ok {
		t.Fatalf("no QueryFunction in %v", fns)
	}
	if q.FunctionUrlConfig == nil || q.FunctionUrlConfig.InvokeMode == nil || *q.FunctionUrlConfig.InvokeMode != "RESPONSE_STREAM" {
		t.Fatal("QueryFunction must stream: FunctionUrlConfig.InvokeMode RESPONSE_STREAM (lambdaurl only streams then)")
	}
	if q.FunctionUrlConfig.AuthType != "AWS_IAM" {
		t.Fatalf("Function URL auth %q: SR-02 prefers AWS_IAM behind CloudFront", q.FunctionUrlConfig.AuthType)
	}
	g := tmpl.Globals["Function"]
	if g == nil {
		t.Fatal("no Globals.Function")
	}
	// every function in the template has a main package under functions/, and every main a resource
	for name := range fns {
		dir := strings.ToLower(strings.TrimSuffix(name, "Function"))
		if _, err := os.Stat(filepath.Join("..", "functions", dir, "main.go")); err != nil {
			t.Errorf("%s has no functions/%s/main.go", name, dir)
		}
	}
	entries, _ := os.ReadDir(filepath.Join("..", "functions"))
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := strings.ToUpper(e.Name()[:1]) + e.Name()[1:] + "Function"
		if _, ok := fns[name]; !ok {
			t.Errorf("functions/%s has no %s resource in template.yaml", e.Name(), name)
		}
	}
}

func TestTemplateGlobalsMatchLambdaBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"Runtime: provided.al2023", "Architectures: [arm64]", "Handler: bootstrap", "DOCMIND_SQL_DRIVER: mysql", "DOCMIND_VECTOR_DRIVER: milvus"} {
		if !strings.Contains(s, want) {
			t.Errorf("template.yaml lacks %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GOARCH=arm64", "CGO_ENABLED=0", "lambda.norpc", "-trimpath", "build-QueryFunction"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile lacks %q", want)
		}
	}
}
