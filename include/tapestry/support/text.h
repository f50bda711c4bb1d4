// Small text utilities shared across modules: one FNV-1a hash and one XML/HTML escape, so that
// fingerprints (search checkpoints, input seeds) and the escaping of names in SVG and Graphviz
// labels have one definition each.
//
//   fnv1a("Y/linear")            // 64-bit FNV-1a of the bytes (offset 0xcbf29ce484222325,
//                                // prime 0x100000001b3): stable across runs and machines
//   xml_escape("a<b & \"c\"")    // "a&lt;b &amp; &quot;c&quot;"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tapestry::support {

/// The 64-bit FNV-1a hash of `text`'s bytes.
[[nodiscard]] constexpr std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// `text` with &, <, > and " replaced by their XML entities (safe in element text and in
/// double-quoted attributes).
[[nodiscard]] std::string xml_escape(std::string_view text);

}  // namespace tapestry::support
