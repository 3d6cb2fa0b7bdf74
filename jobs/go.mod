module github.com/fairlyprompt/fairly/jobs

go 1.26.0

require (
	github.com/fairlyprompt/fairly v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/fairlyprompt/fairly => ../
