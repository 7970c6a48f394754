.PHONY: demo test bench lint

demo:  ## Run the whole pipeline locally on the embedded backend
	scripts/demo.sh

test:  ## Lint, type-check and run every test (Azurite from npm, PostgreSQL if configured)
	scripts/test.sh

bench:  ## Run the benchmarks (ratios measured side by side)
	scripts/bootstrap.sh bench && .venv/bin/billing bench
