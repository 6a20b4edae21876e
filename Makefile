# `make run` and `make test` are the two entry points; everything else supports them.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE_SRC := $(wildcard native/include/*.h native/src/*.c native/build_ffi.py)

.PHONY: run test install native peers system-deps lint bench clean dist

$(STAMP): pyproject.toml setup.py $(NATIVE_SRC)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,analysis,service,bench,docs]'
	$(PY) -m compileall -q driver
	touch $@

install: $(STAMP)

# Rebuild driver/_native after editing native/ (pip install already builds it once).
native: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .

# Bytecode for the editable tree first: a pip install compiles it, an editable one leaves it to the first import,
# which never writes it where PYTHONDONTWRITEBYTECODE is set (every start then compiles the driver: +60-80 % to
# ready). Up to date, the check takes ~0.1 s.
run: $(STAMP)
	$(PY) -m compileall -q driver
	$(VENV)/bin/mediadriver run $(ARGS)

# The real Aeron 1.15.1 jar and a Java 11 runtime for interop tests; javac (any JDK >= 11) compiles
# the small Java test programs with --release 11. Also a Python 3.12 venv with pyaeron (a modern C client)
# when a Python 3.12 is found; without it the pyaeron test skips and says why. Last, optional, the Aeron 1.53 C
# driver and our C sample clients (harness/c_driver.py, needs a C and a C++ compiler): when they cannot be
# built, one line says why and the rest still works.
peers: $(STAMP)
	$(PY) harness/install.py
	@command -v javac >/dev/null 2>&1 || { \
	  echo "javac not found: installing a JDK from Debian"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless; }
	@{ command -v cc && command -v c++ && command -v make; } >/dev/null 2>&1 || { \
	  echo "a C/C++ compiler not found: installing gcc, g++ and make from Debian"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc g++ make || true; }
	$(PY) -m harness.c_driver || echo "aeron-c: not built (harness/c_driver.py failed)"

# System packages some tests need (a real Prometheus server; a Java runtime for Spark; a headless chromium and
# its chromedriver for the service's web page), from Debian.
system-deps:
	@missing=""; \
	command -v prometheus >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v ip >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  echo "installing from Debian:$$missing"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) peers system-deps lint
	$(PY) -m pytest $(PYTEST_ARGS)

# The sdist and a manylinux wheel in dist/ (harness/dist.py): the wheel installs where no compiler exists.
dist: $(STAMP)
	$(PY) harness/dist.py --out dist

# The tracked suite (tools/bench/track.py): the quick set for HEAD recorded under tools/bench/records/<machine>/
# (commit the records), then compared with the median of the three before: a figure more than 20 % worse is named.
bench: $(STAMP) peers
	$(PY) -m compileall -q driver
	$(PY) -m tools.bench.track

clean:
	rm -rf $(VENV) build dist *.egg-info driver/_native*.so driver/concurrent/logbuffer/_fastpath*.so driver/_native.c \
	  .pytest_cache .ruff_cache .mypy_cache .cache
