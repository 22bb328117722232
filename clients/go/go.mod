module idmint.dev/client

go 1.19
