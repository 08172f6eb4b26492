// Package emf writes CloudWatch embedded metric format records
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// the "_aws" metadata that tells CloudWatch Logs which fields of a JSON log line are metrics. The
// scheduled functions (canary, consistency) embed Meta in their own typed records.
package emf

import "time"

// Metric names one field of the record and its unit ("Count", "Percent", "Milliseconds").
type Metric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// Count is a metric in Count.
func Count(name string) Metric { return Metric{Name: name, Unit: "Count"} }

// Directive is one namespace's metrics and the fields they are dimensioned by.
type Directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []Metric   `json:"Metrics"`
}

// Meta is the record's "_aws" member.
type Meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []Directive `json:"CloudWatchMetrics"`
}

// New is the metadata of one record at now: metrics in namespace, dimensioned by the fields dims (none:
// one series for the namespace, written as the empty dimension set [[]] the format requires).
func New(now time.Time, namespace string, dims []string, metrics ...Metric) Meta {
	if dims == nil {
		dims = []string{}
	}
	return Meta{Timestamp: now.UnixMilli(), CloudWatchMetrics: []Directive{{Namespace: namespace, Dimensions: [][]string{dims}, Metrics: metrics}}}
}
