"""Moving a tenant out and in: an archive of its rows (`archive`: the format, and reading one
back whole before anything is written), writing one (`exporting`) and importing one
(`importing`: all or nothing, twice is once, sealed under the target's keys). The CLI
(`continuum export`, `continuum import`) and the API (`GET /v1/export`, `POST /v1/import`)
are thin doors onto these. See docs/design.md, *Export and import*."""
