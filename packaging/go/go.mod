module alphamoe/router

go 1.19
