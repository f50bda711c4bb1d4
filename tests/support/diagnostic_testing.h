// Test helper: the diagnostics a call throws (support/diagnostic.h), for tests that check a
// reader's error carries its Location as data, not only as text.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "tapestry/support/diagnostic.h"

namespace tapestry::support::testing {

/// The diagnostics of the DiagnosticError `call` throws; a test failure (and none) when it throws
/// no DiagnosticError.
template <class Call>
std::vector<Diagnostic> thrown_diagnostics(Call&& call) {
  try {
    call();
  } catch (const DiagnosticError& e) {
    return e.diagnostics();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw an exception without diagnostics: " << e.what();
    return {};
  }
  ADD_FAILURE() << "threw nothing";
  return {};
}

/// The one diagnostic `call` throws (an empty one, and a test failure, when not exactly one).
template <class Call>
Diagnostic thrown_diagnostic(Call&& call) {
  std::vector<Diagnostic> all = thrown_diagnostics(call);
  if (all.size() != 1) {
    ADD_FAILURE() << "expected one diagnostic, got " << all.size();
    return {};
  }
  return all.front();
}

}  // namespace tapestry::support::testing
