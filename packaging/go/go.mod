module github.com/alphamoe/alphamoe-router/packaging/go

go 1.19
