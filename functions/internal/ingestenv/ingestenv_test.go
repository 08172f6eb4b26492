package ingestenv

import (
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
)

// A Lambda keeps the PDF engine longer than the server's default: its warm invocations minutes apart
// should not each wait for the engine to start.
func TestStagesKeepPDFEngineAcrossWarmInvocations(t *testing.T) {
	st := Stages(config.Default(), Stores{}, nil, nil)
	if st.Limits.PDFIdle != lambdaPDFIdle || st.Limits.PDFIdle <= extract.DefaultPDFIdle {
		t.Errorf("Lambda PDF idle %v, want %v (longer than the server's %v)", st.Limits.PDFIdle, lambdaPDFIdle, extract.DefaultPDFIdle)
	}
	if st.Limits.Budget == nil {
		t.Error("no extraction memory budget")
	}
}
