#!/usr/bin/env bash
# Regenerates docs/DIALECT.md from the dialect's ODS (test/Dialect/doc.test
# fails while it is out of date).
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/lib/llvm-19/bin/mlir-tblgen -gen-dialect-doc -dialect=optgen \
  -I /usr/lib/llvm-19/include -I dialect dialect/OptgenOps.td > docs/DIALECT.md
