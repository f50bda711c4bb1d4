// support/text.h: FNV-1a against the published 64-bit test vectors (so fingerprints in saved
// checkpoints and the inputs' seeds stay what they were), and the XML escape.
#include "tapestry/support/text.h"

#include <gtest/gtest.h>

namespace tapestry::support {
namespace {

TEST(Fnv1a, PublishedVectors) {
  // Fowler, Noll and Vo's reference values for FNV-1a 64.
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ull);
  static_assert(fnv1a("a") == 0xaf63dc4c8601ec8cull);  // usable at compile time
}

TEST(Fnv1a, BytesAboveSevenBitsAreUnsigned) {
  // A sign-extended char would hash "\xff" as ~0: the byte is 0xff.
  std::uint64_t h = 0xcbf29ce484222325ull;
  h ^= 0xffu;
  h *= 0x100000001b3ull;
  EXPECT_EQ(fnv1a("\xff"), h);
}

TEST(XmlEscape, TheFiveCasesAndNothingElse) {
  EXPECT_EQ(xml_escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_EQ(xml_escape("plain/name.2 'q' µs\n"), "plain/name.2 'q' µs\n");
  EXPECT_EQ(xml_escape(""), "");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escapes once per call, never interprets
}

}  // namespace
}  // namespace tapestry::support
