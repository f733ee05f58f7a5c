module groupcheck/conformance/targets/kfake

go 1.26.0

// kfake has no tagged releases; this pseudo-version needs franz-go's kversion feature API
// (EachSupportedFeature), which its own go.mod's franz-go v1.21.7 lacks: franz-go v1.22.2 has it.

require github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.2 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.0 // indirect
)
