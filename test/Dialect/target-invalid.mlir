// RUN: %optgen-opt %s -split-input-file -verify-diagnostics

// The target description is checked once, where it is parsed or built.

// expected-error @below {{target 'x': the accumulator is f32 or f64, not 'i8'}}
module attributes {optgen.target = #optgen.target<name = "x", kind = host, accumulator = i8>} {}

// -----

// expected-error @below {{target 'x' is a host: it has no narrow storage, threads, vectors, blocks or arch}}
module attributes {optgen.target = #optgen.target<name = "x", kind = host, accumulator = f64, threads_per_block = 256>} {}

// -----

// expected-error @below {{target 'x': threads_per_block is a power of two from 32 to 1024, not 96}}
module attributes {optgen.target = #optgen.target<name = "x", kind = device, accumulator = f32, threads_per_block = 96, vector_width = 4, max_blocks_per_member = 1, reduction_blocks = 1, arch = 90>} {}

// -----

// expected-error @below {{target 'x': vector_width is 1, 2 or 4 floats, not 8}}
module attributes {optgen.target = #optgen.target<name = "x", kind = device, accumulator = f32, threads_per_block = 256, vector_width = 8, max_blocks_per_member = 1, reduction_blocks = 1, arch = 90>} {}

// -----

// expected-error @below {{target 'x': max_blocks_per_member, reduction_blocks and arch are at least 1}}
module attributes {optgen.target = #optgen.target<name = "x", kind = device, accumulator = f32, threads_per_block = 256, vector_width = 4>} {}

// -----

// expected-error @below {{target 'x': a host's max_loop_versions is a power of two and its parallel_elements at least 1}}
module attributes {optgen.target = #optgen.target<name = "x", kind = host, accumulator = f64, max_loop_versions = 6, parallel_elements = 65536>} {}

// -----

// expected-error @below {{target 'x': a host's max_loop_versions is a power of two and its parallel_elements at least 1}}
module attributes {optgen.target = #optgen.target<name = "x", kind = host, accumulator = f64, max_loop_versions = 8>} {}

// -----

// expected-error @below {{target 'x' is a device: its printer makes no loop versions and no OpenMP loops}}
module attributes {optgen.target = #optgen.target<name = "x", kind = device, accumulator = f32, threads_per_block = 256, vector_width = 4, max_blocks_per_member = 1, reduction_blocks = 1, arch = 90, max_loop_versions = 8>} {}

// -----

// expected-error @below {{a target has a name}}
module attributes {optgen.target = #optgen.target<name = "", kind = host, accumulator = f64>} {}

// -----

// The description is the module's, and only a description.
// expected-error @below {{'optgen.target' is a module's #optgen.target}}
module attributes {optgen.target = "cpu"} {}

// -----

module {
  // expected-error @below {{'optgen.target' is a module's #optgen.target}}
  optgen.optimizer @o attributes {optgen.target = #optgen.target<name = "cpu", kind = host, accumulator = f64, max_loop_versions = 8, parallel_elements = 65536>} {
  }
}
