module github.com/portico-llm/portico/bench

go 1.26.0

require github.com/portico-llm/portico v0.0.0

require github.com/sony/gobreaker/v2 v2.4.0

replace github.com/portico-llm/portico => ../
