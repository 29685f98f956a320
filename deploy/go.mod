module github.com/porticohq/portico/deploy

go 1.26.0
