// Text forms: parse_range / parse_point accept what to_string prints, free whitespace, the
// full int64 range; malformed input is an Error naming the column and what was expected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "tapestry/zspace/text.h"
#include "zspace/zspace_testing.h"

namespace tapestry::zspace {
namespace {

using testing::Fails;
using testing::FailsWith;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

struct RangeText {
  const char* text;
  Range expected;
};

TEST(ParseRange, AcceptsPrintedAndSpacedForms) {
  const RangeText cases[] = {
      {"zr[2:4, 3:5]", Range(Point{2, 3}, Point{4, 5})},
      {"zr[]", Range()},
      {"zr[-40:60, 20:32]", Range(Point{-40, 20}, Point{60, 32})},
      {"zr[0:0]", Range(Point{0}, Point{0})},
      {"  zr[ 2 : 4 ,3:5 ]  ", Range(Point{2, 3}, Point{4, 5})},
      {"zr[\t1:2,\n3:4]", Range(Point{1, 3}, Point{2, 4})},
      {"zr[ ]", Range()},
      {"zr[-9223372036854775808:9223372036854775807]", Range(Point{kMin}, Point{kMax})},
  };
  for (const RangeText& c : cases) EXPECT_EQ(parse_range(c.text), c.expected) << c.text;
}

struct PointText {
  const char* text;
  Point expected;
};

TEST(ParsePoint, AcceptsParensAndBrackets) {
  const PointText cases[] = {
      {"(1, -2)", Point{1, -2}}, {"[1, -2]", Point{1, -2}},
      {"()", Point()},           {"[]", Point()},
      {" ( 7 ) ", Point{7}},     {"(-9223372036854775808, 9223372036854775807)", Point{kMin, kMax}},
  };
  for (const PointText& c : cases) EXPECT_EQ(parse_point(c.text), c.expected) << c.text;
}

TEST(ParseRange, RoundTripsToString) {
  for (const char* text : {"zr[2:4, 3:5]", "zr[]", "zr[-1:-1, 0:7, 3:100]"}) {
    EXPECT_EQ(parse_range(text).to_string(), text);
  }
}

TEST(ParseRange, MalformedTextNamesColumnAndExpectation) {
  EXPECT_THAT([] { (void)parse_range("zr[2:4, 3]"); },
              FailsWith({"column 10", "expected ':'", "zr[2:4, 3]"}));
  EXPECT_THAT([] { (void)parse_range("zr[2:4, 3:5"); }, FailsWith({"column"}));
  EXPECT_THAT([] { (void)parse_range("[2:4]"); }, FailsWith({"column 1"}));
  EXPECT_THAT([] { (void)parse_range("zr[2:4]x"); }, FailsWith({"column 8"}));
  EXPECT_THAT([] { (void)parse_range("zr[a:4]"); }, FailsWith({"column 4"}));
  EXPECT_THAT([] { (void)parse_range(""); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[2:4,]"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[2:4 3:5]"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[- 2:4]"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[+-1:4]"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[--1:4]"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[1.5:4]"); }, Fails());
}

TEST(ParseRange, RangeInvariantsAreChecked) {
  EXPECT_THAT([] { (void)parse_range("zr[3:2]"); }, FailsWith({"(3)", "(2)"}));
}

TEST(ParsePoint, MalformedTextIsAnError) {
  EXPECT_THAT([] { (void)parse_point("(1, 2"); }, FailsWith({"column"}));
  EXPECT_THAT([] { (void)parse_point("(1, 2]"); }, Fails());
  EXPECT_THAT([] { (void)parse_point("1, 2"); }, Fails());
  EXPECT_THAT([] { (void)parse_point("(1,, 2)"); }, Fails());
  EXPECT_THAT([] { (void)parse_point("(1 2)"); }, Fails());
  EXPECT_THAT([] { (void)parse_point("(0x10)"); }, Fails());
}

TEST(ParseText, OutOfRangeNumbersAreErrorsNotWraps) {
  EXPECT_THAT([] { (void)parse_point("(9223372036854775808)"); },
              FailsWith({"9223372036854775808", "int64"}));
  EXPECT_THAT([] { (void)parse_point("(-9223372036854775809)"); }, Fails());
  EXPECT_THAT([] { (void)parse_point("(99999999999999999999999999)"); }, Fails());
  EXPECT_THAT([] { (void)parse_range("zr[0:18446744073709551616]"); }, Fails());
}

}  // namespace
}  // namespace tapestry::zspace
