package infra

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"

	sqlschema "github.com/docmind/docmind/infra/sql"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/ingest"
)

func readTemplate(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every Task of every state machine reaches a function of the template through DefinitionSubstitutions,
// that function is built from the machine's functions, and the stages the Tasks name are exactly the
// ones the stage binary dispatches (ingest.StageNames; askflow.StageNames for the answer workflow).
func TestStateMachineTasksMapToFunctionsAndHandlers(t *testing.T) {
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	text := readTemplate(t)
	subs := map[string]string{} // ${Name} -> function logical id
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+): !GetAtt (\w+)\.Arn\s*$`).FindAllStringSubmatch(text, -1) {
		subs["${"+m[1]+"}"] = m[2]
	}
	sms := tmpl.GetAllServerlessStateMachineResources()
	if len(sms) == 0 {
		t.Fatal("no AWS::Serverless::StateMachine in template.yaml")
	}
	// the ingestion workflow is Standard (exactly-once task starts, a year of history) over functions/stage;
	// the answer workflow is Express (a person waits on it synchronously) over askstep, rerank and grade
	// the connector sync is Standard (it waits on ingestions with .sync:2, which Express cannot) over
	// functions/connector, whose payload names a "step"
	machines := map[string]struct {
		typ, stageDir string
		dirs          []string
		stages        []string
		key           string
		integrations  []string // service integrations its Tasks may use besides functions
	}{
		"IngestStateMachine": {"STANDARD", "stage", []string{"stage"}, ingest.StageNames(), "stage", nil},
		"AnswerStateMachine": {"EXPRESS", "askstep", []string{"askstep", "rerank", "grade"}, slices.Sorted(slices.Values(askflow.StageNames)), "stage", nil},
		"ConnectorSyncStateMachine": {"STANDARD", "connector", []string{"connector"}, syncflow.Steps(), "step",
			[]string{"arn:aws:states:::states:startExecution.sync:2"}},
	}
	for name, sm := range sms {
		want, known := machines[name]
		if !known {
			t.Errorf("%s: no expectations for this state machine in this test", name)
			continue
		}
		if sm.Type == nil || *sm.Type != want.typ {
			t.Errorf("%s must be a %s workflow", name, want.typ)
		}
		var uri string
		if sm.DefinitionUri != nil && sm.DefinitionUri.String != nil {
			uri = *sm.DefinitionUri.String
		}
		def, err := os.ReadFile(filepath.Join("..", uri))
		if err != nil {
			t.Fatalf("%s: DefinitionUri %q: %v", name, uri, err)
		}
		m, err := aslrun.Parse(def)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		var stages []string
		for task, s := range m.Tasks() {
			if slices.Contains(want.integrations, s.Resource) {
				continue
			}
			fn, ok := subs[s.Resource]
			if !ok {
				t.Errorf("%s task %s: Resource %s is not a DefinitionSubstitution of a function's Arn", uri, task, s.Resource)
				continue
			}
			if _, ok := fns[fn]; !ok {
				t.Errorf("%s task %s: %s is not a function in the template", uri, task, fn)
			}
			if !strings.Contains(text, "FunctionName: !Ref "+fn) {
				t.Errorf("%s may not invoke %s: no LambdaInvokePolicy names it", name, fn)
			}
			dir, err := makeTarget(fn)
			if err != nil || !slices.Contains(want.dirs, dir) {
				t.Errorf("task %s runs on %s, built from functions/%s (%v); want one of %v", task, fn, dir, err, want.dirs)
			}
			if dir != want.stageDir {
				continue
			}
			p, _ := s.Parameters.(map[string]any)
			st, _ := p[want.key].(string)
			stages = append(stages, st)
		}
		sort.Strings(stages)
		stages = slices.Compact(stages) // a stage may serve several Tasks (PlanEmbed: plan and rebuild)
		if !slices.Equal(stages, want.stages) {
			t.Errorf("%s names stages %v; functions/%s dispatches %v", uri, stages, want.stageDir, want.stages)
		}
	}
}

// The SchemaMigration custom resource re-runs the migrate function only when a property changes: its
// SchemaVersion must be the newest migration, or a deploy would ship code ahead of its schema.
func TestSchemaMigrationVersionIsNewest(t *testing.T) {
	m := regexp.MustCompile(`SchemaVersion: "(\d+)"`).FindStringSubmatch(readTemplate(t))
	if m == nil {
		t.Fatal("template.yaml has no SchemaMigration SchemaVersion")
	}
	got, _ := strconv.Atoi(m[1])
	for _, d := range []string{"mysql", "sqlite"} {
		migs, err := sqlschema.Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		if newest := migs[len(migs)-1].Version; newest != got {
			t.Errorf("SchemaVersion %d, newest %s migration %d: bump it in template.yaml", got, d, newest)
		}
	}
}

// Least privilege: no IAM action is a wildcard ("*", "s3:*", "s3:Get*").
func TestNoWildcardActions(t *testing.T) {
	lines := strings.Split(readTemplate(t), "\n")
	checked := 0
	for i, l := range lines {
		key, val, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || key != "Action" {
			continue
		}
		vals := []string{val}
		if strings.TrimSpace(val) == "" { // a block list follows
			indent := len(l) - len(strings.TrimLeft(l, " "))
			for _, r := range lines[i+1:] {
				if len(r)-len(strings.TrimLeft(r, " ")) <= indent || !strings.HasPrefix(strings.TrimSpace(r), "- ") {
					break
				}
				vals = append(vals, r)
			}
		}
		for _, v := range vals {
			checked++
			if strings.Contains(v, "*") {
				t.Errorf("template.yaml line %d: wildcard action %q", i+1, strings.TrimSpace(v))
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d actions checked: the scan is broken", checked)
	}
}
