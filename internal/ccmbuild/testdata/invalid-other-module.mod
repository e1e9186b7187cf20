module example.com/another

go 1.25.0
