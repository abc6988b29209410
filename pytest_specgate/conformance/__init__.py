"""The engine-conformance spec, shipped with the plugin so an installed backend can run it.

``pytest --pyargs pytest_specgate.conformance --specgate-engine=NAME`` runs it against any
backend the run can boot (built in or registered in the ``pytest_specgate.backends``
entry-point group); docs/backends.md says what each test asks of a backend.
"""
