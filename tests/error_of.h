#pragma once
// The message of the attnrt::Error an action throws, or "(no error)": tests match the phrases a
// bad input's message must carry (the culprit's name, the rule it broke).

#include <string>

#include "attnrt/core/error.h"

namespace attnrt::testing {

std::string error_of(auto&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace attnrt::testing
