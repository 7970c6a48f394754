#!/bin/bash
# Accept connections on 1433 (and drop them) until SIGTERM.
set -euo pipefail
: "${MSSQL_SA_PASSWORD:?the compose file sets MSSQL_SA_PASSWORD}"
[ "${ACCEPT_EULA:-}" = "Y" ] || { echo "ACCEPT_EULA=Y is required" >&2; exit 1; }
trap 'exit 0' TERM INT
echo "SQL Server stand-in: listening on 1433 (no database behind it)"
exec perl -MIO::Socket::INET -e '
  $SIG{TERM} = sub { exit 0 };
  my $server = IO::Socket::INET->new(LocalPort => 1433, Listen => 16, ReuseAddr => 1)
    or die "listen: $!";
  while (my $client = $server->accept) { close $client }'
