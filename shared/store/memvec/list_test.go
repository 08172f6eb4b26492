package memvec

import (
	"testing"

	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestVectorListerConformance(t *testing.T) {
	storetest.TestVectorLister(t, func(t *testing.T) store.VectorIndex { return New(storetest.VectorDim) })
}
