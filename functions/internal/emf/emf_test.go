package emf

import (
	"encoding/json"
	"testing"
	"time"
)

func TestNewEncodesTheFormat(t *testing.T) {
	at := time.UnixMilli(1795953600123)
	for _, c := range []struct {
		dims []string
		want string
	}{
		{nil, `{"Timestamp":1795953600123,"CloudWatchMetrics":[{"Namespace":"Docmind/X","Dimensions":[[]],"Metrics":[{"Name":"Runs","Unit":"Count"},{"Name":"P50","Unit":"Milliseconds"}]}]}`},
		{[]string{"Class"}, `{"Timestamp":1795953600123,"CloudWatchMetrics":[{"Namespace":"Docmind/X","Dimensions":[["Class"]],"Metrics":[{"Name":"Runs","Unit":"Count"},{"Name":"P50","Unit":"Milliseconds"}]}]}`},
	} {
		b, err := json.Marshal(New(at, "Docmind/X", c.dims, Count("Runs"), Metric{"P50", "Milliseconds"}))
		if err != nil || string(b) != c.want {
			t.Errorf("dims %v:\n got %s (%v)\nwant %s", c.dims, b, err, c.want)
		}
	}
}
