#include "tapestry/runtime/npy.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy_header.h"
#include "support/diagnostic_testing.h"
#include "tapestry/runtime/compare.h"

namespace tapestry::runtime {
namespace {

using ::testing::HasSubstr;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            fmt::format("tapestry_npy_test_{}_{}", ::getpid(), counter_++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const {
    return path_ / name;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::string header_bytes(const std::string& dict, int major = 1) {
  std::string header = dict + "\n";
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const std::size_t width = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < width; ++i)
    out.push_back(static_cast<char>(header.size() >> (8 * i)));
  return out + header;
}

std::string error_of(std::string_view bytes) {
  try {
    (void)parse_npy(bytes, "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

template <typename Fn>
std::string error_of_file(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  const std::vector<Buffer> buffers = {
      Buffer::from_values<float>(Range::of_shape({2, 3}), {1, -2, 3.5f, 4, 5, 6}),
      Buffer::from_values<double>(Range::of_shape({3}), {0.1, -0.2, 1e300}),
      Buffer::from_values<std::int32_t>(Range(), {-7}),
      Buffer::from_values<std::int64_t>(Range::of_shape({1, 2, 1}), {1ll << 40, -3}),
      Buffer(DType::kFloat32, Range::of_shape({0, 4})),
  };
  for (const Buffer& b : buffers) {
    const std::string bytes = format_npy(b);
    EXPECT_EQ((bytes.size() - b.size_bytes()) % 64, 0u) << "data must start 64-byte aligned";
    const Buffer back = parse_npy(bytes, "mem");
    EXPECT_TRUE(compare_buffers(b, back).bitwise_equal) << b.describe();
  }
}

TEST(Npy, FilesHaveNoCoordinates) {
  TempDir dir;
  Buffer x = Buffer::from_values<float>(Range({-40, 20}, {-39, 22}), {1, 2});
  write_npy(dir / "x.npy", x);
  Buffer back = read_npy(dir / "x.npy");
  EXPECT_EQ(back.range(), Range::of_shape({1, 2}));
  EXPECT_EQ(back.at<float>(Point{0, 1}), 2.0f);
  EXPECT_NO_THROW((void)read_npy(dir / "x.npy", Point{1, 2}));
  try {
    (void)read_npy(dir / "x.npy", Point{2, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("x.npy: shape (1, 2) does not match the expected (2, 1)"));
  }
  // Writing leaves no temporary file behind.
  int files = 0;
  for ([[maybe_unused]] const auto& f : std::filesystem::directory_iterator(dir / "")) ++files;
  EXPECT_EQ(files, 1);
}

// A box read alone is the same cells as the whole file's: full rows (one read), rows of part
// of the columns (one read per row), a corner of a 3-d array, one cell, nothing.
TEST(Npy, ReadsOnlyABox) {
  TempDir dir;
  const Range whole = Range::of_shape({5, 4, 3});
  std::vector<double> values(60);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  write_npy(dir / "x.npy", Buffer::from_values<double>(whole, values));
  const Buffer all = read_npy(dir / "x.npy");
  for (const Range& box :
       {whole, Range({1, 0, 0}, {3, 4, 3}), Range({1, 1, 0}, {4, 3, 3}),
        Range({2, 1, 1}, {5, 4, 2}), Range({4, 3, 2}, {5, 4, 3}), Range({2, 2, 2}, {2, 2, 2})}) {
    const Buffer part = read_npy_box(dir / "x.npy", Point{5, 4, 3}, box);
    ASSERT_EQ(part.range(), box);
    for (const Point& p : box.points()) EXPECT_EQ(part.at<double>(p), all.at<double>(p));
  }
  EXPECT_THROW((void)read_npy_box(dir / "x.npy", Point{5, 4, 3}, Range({0, 0, 0}, {6, 1, 1})),
               Error);
  EXPECT_THROW((void)read_npy_box(dir / "x.npy", Point{4, 5, 3}, Range({0, 0, 0}, {1, 1, 1})),
               Error);
}

TEST(Npy, ReadsVersionTwoHeaders) {
  std::string bytes = header_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 2);
  const std::int32_t values[] = {5, -6};
  bytes.append(reinterpret_cast<const char*>(values), sizeof values);
  Buffer b = parse_npy(bytes, "v2.npy");
  EXPECT_EQ(b.at<std::int32_t>(Point{1}), -6);
}

// The type strings come from the dtype table: '<' or '=' (native, little-endian here), kind and
// size of each executable dtype ('<u2' holds bfloat16's bit patterns: NumPy has no bfloat16);
// numpy's other types (int8, bool, uint8, …) are refused.
TEST(Npy, TypeStringsOfTheExecutableDtypes) {
  const auto one_element = [](std::string_view descr, std::size_t bytes) {
    return header_bytes(
               fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (1,), }}", descr)) +
           std::string(bytes, '\0');
  };
  const std::pair<std::string_view, DType> accepted[] = {
      {"<f4", DType::kFloat32}, {"=f4", DType::kFloat32}, {"<f8", DType::kFloat64},
      {"=f8", DType::kFloat64}, {"<i4", DType::kInt32},   {"=i4", DType::kInt32},
      {"<i8", DType::kInt64},   {"=i8", DType::kInt64},   {"<f2", DType::kFloat16},
      {"=f2", DType::kFloat16}, {"<u2", DType::kBFloat16}};
  for (const auto& [descr, dtype] : accepted) {
    EXPECT_EQ(parse_npy(one_element(descr, ir::dtype_size_bytes(dtype)), "t.npy").dtype(), dtype)
        << descr;
  }
  for (std::string_view descr : {"|i1", "<i1", "|b1", "|u1", "<i2", "<u8", "<u4", "=f", "=", "<"}) {
    EXPECT_THAT([&] { (void)parse_npy(one_element(descr, 8), "t.npy"); },
                ::testing::ThrowsMessage<Error>(
                    HasSubstr(fmt::format("unsupported dtype '{}'; supported: '<f4' '<f8' '<i4' "
                                          "'<i8' '<u2' '<f2'",
                                          descr))))
        << descr;
  }
}

TEST(Npy, BadFilesGiveClearErrors) {
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data(8, '\0');
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"PK\x03\x04 not npy at all", "x.npy: not a .npy file (bad magic string)"},
      {header_bytes(ok_dict, 4) + data, "x.npy: unsupported .npy version 4.x"},
      {header_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }") + data,
       "x.npy: unsupported dtype '>f4' (big-endian); supported: '<f4' '<f8' '<i4' '<i8' '<u2' "
       "'<f2'"},
      {header_bytes("{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }") + data,
       "x.npy: unsupported dtype '|i1'"},
      {header_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }") + data,
       "x.npy: fortran_order True is not supported"},
      {header_bytes(ok_dict) + data.substr(0, 5),
       "x.npy: truncated data: 5 bytes for shape (2) of float32 (8 needed)"},
      {header_bytes(ok_dict) + data + "xx", "x.npy: 2 trailing bytes after the data"},
      {header_bytes("{'descr': '<f4', 'shape': (2,), }") + data,
       "x.npy: malformed header: it has no 'fortran_order'"},
      {header_bytes("{'descr': '<f4' 'fortran_order': False}") + data,
       "x.npy: malformed header: expected ','"},
      {header_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }") + data,
       "x.npy: malformed header: negative dimension -2"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "x.npy: truncated header"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(error_of(c.bytes), HasSubstr(c.message)) << c.message;
  }
}

// A header may claim any shape: its byte count is checked (overflow-checked) against the bytes
// the file holds and against the expected shape before anything is allocated, so a 128-byte
// file claiming 10^10 or 10^11 × 12 floats is an Error, not a std::bad_alloc (or 40 GB of zeros).
TEST(Npy, HeadersClaimingHugeShapesAreRefusedBeforeAllocating) {
  const auto file_of = [](const std::string& shape) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    dict.resize(128 - 10 - 1, ' ');  // numpy's padding: a 128-byte file, header only, no data
    return header_bytes(dict);
  };
  const std::string huge = file_of("(10000000000,)");
  ASSERT_EQ(huge.size(), 128u);
  EXPECT_THAT(error_of(huge),
              HasSubstr("x.npy: truncated data: 0 bytes for shape (10000000000) of float32 "
                        "(40000000000 needed)"));
  EXPECT_THAT(error_of(file_of("(100000000000, 12)")),
              HasSubstr("truncated data: 0 bytes for shape (100000000000, 12)"));
  EXPECT_THAT(error_of(file_of("(10000000000, 10000000000, 10000000000)")),
              HasSubstr("x.npy: shape (10000000000, 10000000000, 10000000000) of float32 has more "
                        "bytes than a 64-bit size holds"));
  // Through a file, with the shape the graph wants: the same errors, nothing read.
  TempDir dir;
  std::ofstream(dir / "x.npy", std::ios::binary) << huge;
  EXPECT_THAT(error_of_file([&] { (void)read_npy(dir / "x.npy", Point{4}); }),
              HasSubstr("x.npy: truncated data: 0 bytes for shape (10000000000)"));
  // A consistent file of the wrong shape: refused before its data is read.
  write_npy(dir / "y.npy", Buffer(DType::kFloat32, Range::of_shape({2, 3})));
  EXPECT_THAT(error_of_file([&] { (void)read_npy(dir / "y.npy", Point{4}); }),
              HasSubstr("y.npy: shape (2, 3) does not match the expected (4)"));
  // A version-2 header length of 4 GiB in a small file.
  EXPECT_THAT(
      error_of(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14)),
      HasSubstr("x.npy: truncated header: it announces 4294967295 bytes, the file holds 2"));
}

// Only regular files are read: a device, a FIFO or a directory is refused at once (reading
// /dev/zero would never end; opening a FIFO would wait for a writer).
TEST(Npy, OnlyRegularFilesAreRead) {
  TempDir dir;
  std::filesystem::create_symlink("/dev/zero", dir / "zero.npy");
  ASSERT_EQ(::mkfifo((dir / "fifo.npy").c_str(), 0600), 0);
  std::filesystem::create_directories(dir / "dir.npy");
  for (const char* name : {"zero.npy", "fifo.npy", "dir.npy"}) {
    EXPECT_EQ(error_of_file([&] { (void)read_npy(dir / name, Point{4}); }),
              (dir / name).string() + ": not a regular file");
  }
  // A symlink to a regular file is fine.
  write_npy(dir / "real.npy", Buffer(DType::kFloat32, Range::of_shape({4})));
  std::filesystem::create_symlink(dir / "real.npy", dir / "link.npy");
  EXPECT_EQ(read_npy(dir / "link.npy", Point{4}).range(), Range::of_shape({4}));
}

TEST(Npy, MissingFileNamesIt) {
  try {
    (void)read_npy("/nonexistent/dir/a.npy");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/dir/a.npy: cannot open for reading");
  }
  EXPECT_THROW(write_npy("/nonexistent/dir/a.npy", Buffer()), Error);
}

// The reader's errors name the file as data (support/diagnostic.h), not only as text.
TEST(Npy, ErrorsCarryTheFileAsTheirLocation) {
  support::Diagnostic d = support::testing::thrown_diagnostic(
      [] { (void)parse_npy("PK\x03\x04 not npy at all", "x.npy"); });
  EXPECT_EQ(d.where.file, "x.npy");
  EXPECT_EQ(d.message, "not a .npy file (bad magic string)");
  d = support::testing::thrown_diagnostic([] { (void)read_npy("/nonexistent/dir/a.npy"); });
  EXPECT_EQ(d.where.file, "/nonexistent/dir/a.npy");
  EXPECT_EQ(d.message, "cannot open for reading");
}

TEST(NpyHeader, ParsesPythonLiterals) {
  auto h =
      detail::parse_npy_header("{\"descr\": \"<i8\", 'shape': (3L, 4), 'fortran_order': False}");
  EXPECT_EQ(h.descr, "<i8");
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(detail::python_tuple(Point{5}), "(5,)");
  EXPECT_EQ(detail::python_tuple(Point{}), "()");
  EXPECT_EQ(detail::python_tuple(Point{2, 3}), "(2, 3)");
  EXPECT_THROW(detail::parse_npy_header("{'descr': '<f4', 'other': 1}"), Error);
}

// ---- cross-check with NumPy, when the system Python has it -----------------------------------

bool have_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0;
}

TEST(NpyNumpy, NumpyReadsOursAndWeReadNumpys) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  Buffer ours = Buffer::from_values<double>(Range::of_shape({2, 3}), {1, 2, 3, 4, 5, 6.25});
  write_npy(dir / "ours.npy", ours);
  const std::string script = fmt::format(
      "import numpy as np\n"
      "a = np.load('{0}')\n"
      "assert a.dtype == np.float64 and a.shape == (2, 3), (a.dtype, a.shape)\n"
      "assert a[1, 2] == 6.25 and a.sum() == 21.25\n"
      "np.save('{1}', np.arange(24, dtype='<f4').reshape(2, 3, 4) - 5)\n"
      "np.save('{2}', np.array([[1, -2], [3, 4]], dtype='<i8'))\n"
      "np.save('{3}', np.array(7, dtype='<i4'))\n"
      "np.save('{4}', np.asfortranarray(np.ones((2, 2))))\n",
      (dir / "ours.npy").string(), (dir / "f4.npy").string(), (dir / "i8.npy").string(),
      (dir / "i4.npy").string(), (dir / "fortran.npy").string());
  { std::ofstream(dir / "check.py") << script; }
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir / "check.py").string()).c_str()), 0);

  // float16 is NumPy's '<f2'; bfloat16 travels as its bit patterns, '<u2'.
  Buffer half(DType::kFloat16, Range::of_shape({3}));
  Buffer brain(DType::kBFloat16, Range::of_shape({3}));
  const float values[] = {1.5F, -0.1F, 65504.0F};
  for (std::size_t i = 0; i < 3; ++i) {
    half.values<Float16>()[i] = to_float16(values[i]);
    brain.values<BFloat16>()[i] = to_bfloat16(values[i]);
  }
  write_npy(dir / "f2.npy", half);
  write_npy(dir / "bf.npy", brain);
  const std::string half_script = fmt::format(
      "import numpy as np\n"
      "h = np.load('{0}')\n"
      "assert h.dtype == np.float16 and list(h) == list(np.array([1.5, -0.1, 65504], np.float16))\n"
      "b = np.load('{1}')\n"
      "assert b.dtype == np.uint16, b.dtype\n"
      "v = (b.astype(np.uint32) << 16).view(np.float32)\n"
      "assert list(v) == [1.5, np.float32(-0.10009765625), 65536.0], v\n"
      "np.save('{2}', np.array([0.5, -2.25], np.float16))\n",
      (dir / "f2.npy").string(), (dir / "bf.npy").string(), (dir / "f2_np.npy").string());
  { std::ofstream(dir / "check_half.py") << half_script; }
  ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir / "check_half.py").string()).c_str()), 0);
  Buffer f2 = read_npy(dir / "f2_np.npy");
  EXPECT_EQ(static_cast<float>(f2.at<Float16>(Point{1})), -2.25F);

  Buffer f4 = read_npy(dir / "f4.npy");
  EXPECT_EQ(f4.range(), Range::of_shape({2, 3, 4}));
  EXPECT_EQ(f4.at<float>(Point{1, 2, 3}), 18.0f);
  Buffer i8 = read_npy(dir / "i8.npy");
  EXPECT_EQ(i8.at<std::int64_t>(Point{0, 1}), -2);
  Buffer i4 = read_npy(dir / "i4.npy");
  EXPECT_EQ(i4.rank(), 0u);
  EXPECT_EQ(i4.at<std::int32_t>(Point{}), 7);
  EXPECT_THROW((void)read_npy(dir / "fortran.npy"), Error);
}

}  // namespace
}  // namespace tapestry::runtime
