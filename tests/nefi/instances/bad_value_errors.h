#pragma once
// The check every instance's config validation gets: a bad value for a key
// must stop the instance with an fk::Error whose message is one line and
// names the key in quotes ('key', as nefi's config errors write it), so a user
// sees which setting to fix. One table row a case;
// each case is traced with its key=value, so a failure says which row broke.
#include <gtest/gtest.h>

#include <functional>
#include <source_location>
#include <span>
#include <string>

#include "fk/error.h"
#include "nefi/params.h"

namespace nefi::test {

struct BadValue {
  const char* key;
  const char* value;
};

// Expects `attempt` to throw an fk::Error whose message contains `fragment` and
// no newline. Any other exception escapes and fails the test.
inline void expect_one_line_error_naming(const std::string& fragment,
                                         const std::function<void()>& attempt) {
  try {
    attempt();
  } catch (const fk::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos)
        << "the error does not name '" << fragment << "': " << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << "the error is not one line: " << what;
    return;
  }
  ADD_FAILURE() << "accepted: no fk::Error naming '" << fragment << "'";
}

// For each row, `base` with row.key set to row.value must make `attempt` throw
// a one-line fk::Error naming 'row.key' (quoted). Failures are traced to the
// caller's line.
inline void expect_bad_values_name_their_key(
    const Params& base, std::span<const BadValue> bad_values,
    const std::function<void(const Params&)>& attempt,
    std::source_location caller = std::source_location::current()) {
  for (const BadValue& bad : bad_values) {
    const testing::ScopedTrace trace(caller.file_name(), static_cast<int>(caller.line()),
                                     std::string(bad.key) + "=" + bad.value);
    // Refused where it is set (NaN, an infinity, a count past 32 bits) or
    // where the instance reads it: either way one line naming the key.
    expect_one_line_error_naming(std::string("'") + bad.key + "'", [&] {
      Params p = base;
      p.set(bad.key, bad.value);
      attempt(p);
    });
  }
}

}  // namespace nefi::test
