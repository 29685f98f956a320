module github.com/porticohq/portico/deploy

go 1.26.0

require github.com/opencontainers/image-spec v1.1.1

require github.com/opencontainers/go-digest v1.0.0 // indirect
