#!/usr/bin/env perl
# rewrite_cuda_source.pl IN.cu OUT.cpp: a .cu file as C++ for the emulated
# device (emulated_device.h; device_surface.h is forced in first). Launches
# `k<<<grid, block, shared, stream>>>(args)` become
# fkemu::launch(fkemu::config(grid, block, shared, stream), k, args);
# `namespace X::cuda {` becomes X::cuda::emu, so the emulated launchers sit
# beside the real ones in one test binary; the launchers' CUDA-runtime
# helpers (check_launch, check_cuda, unsupported, DeviceGuard,
# cudaFuncGetAttributes, and cudaMemcpyAsync and cudaMemsetAsync on host
# memory) become fkemu's. Fails when the file has a
# kernel but no launch was found, or uses what the emulator does not model
# (any other CUDA runtime call among them, and CUB beyond include/cub/'s
# stand-ins).
use strict;
use warnings;

# --whole-program: for a binary whose CUDA runtime, cuBLAS and cuFFT are the
# emulator's (libraries/): the namespace stays, so the host code's calls reach
# the emulated launchers, and runtime calls and fk's helpers stay as written.
my $whole = @ARGV && $ARGV[0] eq '--whole-program' ? shift @ARGV : '';
my ($in, $out) = @ARGV;
die "usage: rewrite_cuda_source.pl [--whole-program] IN.cu OUT.cpp\n" unless defined $out;
open(my $fh, '<', $in) or die "rewrite_cuda_source.pl: cannot read $in: $!\n";
my $s = do { local $/; <$fh> };
close $fh;

# <mma.h>, cp_async.cuh and CUB's headers are found as the emulator's
# stand-ins (include/); inline PTX in the file itself has none.
for my $unmodelled ('asm volatile') {
  die "rewrite_cuda_source.pl: $in uses $unmodelled, which the emulated device does not model\n"
    if index($s, $unmodelled) >= 0;
}
# CUB: only the headers and calls that include/cub/ stands in for.
my %cub_modelled = map { $_ => 1 } qw(DeviceRadixSort::SortPairs DeviceScan::ExclusiveSum);
(my $stand_ins = __FILE__) =~ s{[^/]*$}{include/};
while ($s =~ m{#include\s*<(cub/[^>]+)>}g) {
  die "rewrite_cuda_source.pl: $in includes <$1>, which the emulated device does not model\n"
    unless -e "$stand_ins$1";
}
while ($s =~ /\bcub::(\w+(?:::\w+)?)/g) {
  die "rewrite_cuda_source.pl: $in uses cub::$1, which the emulated device does not model\n"
    unless $cub_modelled{$1};
}
# The runtime calls the emulated device answers (fkemu's, below); any other
# would reach the real runtime.
my @emulated = qw(MemcpyAsync MemsetAsync MallocAsync FreeAsync GetLastError FuncSetAttribute
                  DeviceGetAttribute GetDevice LaunchCooperativeKernel
                  OccupancyMaxActiveBlocksPerMultiprocessor FuncGetAttributes);
# A cooperative launch runs its blocks together, so their __shared__ statics
# would be one: refused in a kernel that syncs the grid.
while ($s =~ /this_grid\(\)/g) {
  my $at = pos($s);
  my $kernel_start = rindex($s, '__global__', $at);
  my $next = index($s, '__global__', $at);
  my $body = substr($s, $kernel_start, ($next < 0 ? length($s) : $next) - $kernel_start);
  die "rewrite_cuda_source.pl: $in syncs the grid in a kernel with __shared__ variables, "
    . "which the emulated device's blocks would share\n"
    if $body =~ /__shared__/;
}
my $answered = join('|', @emulated);
while (!$whole && $s =~ /\b(cuda(?!(?:$answered)\b)[A-Z]\w*)\s*\(/g) {
  die "rewrite_cuda_source.pl: $in calls $1, which the emulated device does not model\n";
}

# A function of X::cuda the file defines (outside its anonymous namespaces)
# but calls before that definition would bind to the real one, declared in
# X::cuda by the file's header: in a CPU-only build there is none to link.
unless ($whole) {
  my ($anonymous, $n, %first_call, %defined) = (0, 0);
  for my $line (split /\n/, $s) {
    ++$n;
    if ($line =~ /^namespace \{/) { $anonymous = 1; next; }
    if ($line =~ m{^\}  // namespace$}) { $anonymous = 0; next; }
    next if $line =~ m{^\s*//};
    if (!$anonymous && $line =~ /^(?:[\w:<>]+[\s*&]+)+(\w+)\(/ && $line !~ /;\s*$/) {
      $defined{$1} //= $n;
    }
    while ($line =~ /(?<![\w:.>])(\w+)\s*\(/g) { $first_call{$1} //= $n; }
  }
  for my $fn (sort keys %defined) {
    die "rewrite_cuda_source.pl: $in calls $fn (line $first_call{$fn}) before defining it "
      . "(line $defined{$fn}): the emulated code would call the real one; define it first\n"
      if defined $first_call{$fn} && $first_call{$fn} < $defined{$fn};
  }
}

# A kernel's name, with template arguments nested at most once (which may
# call constexpr functions: fused_forward_kernel<p()>).
my $name = qr/[A-Za-z_][\w:]*(?:<[^<>;{}]*(?:<[^<>;{}]*>[^<>;{}]*)*>)?/;
# Kernel templates: launched without template arguments, the call deduces
# them, so the launch goes through a generic lambda (fkemu::launch_deduced).
my $bounds = qr/(?:__launch_bounds__\s*\([^)]*\)\s*)?/;
my %deduced = map { $_ => 1 }
  $s =~ /template\s*<[^{};]*?>\s*__global__\s+${bounds}void\s+${bounds}(\w+)\s*\(/g;
sub launch_of {
  my ($kernel, $config, $more) = @_;
  return "::fkemu::launch_deduced(::fkemu::config($config), [](auto... a) { $kernel(a...); }$more"
    if $deduced{$kernel};
  return "::fkemu::launch(::fkemu::config($config), $kernel$more";
}
my $launches = 0;
$launches += $s =~ s/($name)\s*<<<(.*?)>>>\s*\(\s*\)/launch_of($1, $2, ")")/gse;
$launches += $s =~ s/($name)\s*<<<(.*?)>>>\s*\(/launch_of($1, $2, ", ")/gse;
die "rewrite_cuda_source.pl: $in has kernels but no launch was found\n"
  if $launches == 0 && $s =~ /__global__/;

# Below, until the cooperative groups: the ::emu namespace and what it needs
# beside the real launchers.
unless ($whole) {
  my $spaces = $s =~ s/^namespace (\w+)::cuda \{/namespace $1::cuda::emu {/mg;
  die "rewrite_cuda_source.pl: $in has no `namespace X::cuda {`\n" if $spaces == 0;
  $s =~ s/fk::cuda::detail::check_launch/::fkemu::check_launch/g;
  $s =~ s/fk::cuda::detail::unsupported/::fkemu::unsupported/g;
  $s =~ s/fk::cuda::detail::check_cuda/::fkemu::check_cuda/g;
  $s =~ s/fk::cuda::detail::DeviceGuard/::fkemu::DeviceGuard/g;
  # fk's own .cu files reach those helpers through `using namespace detail;`:
  # using-declarations beside it hide detail's (same line: #line stays right).
  $s =~ s/^(\s*using namespace detail;)/$1 using ::fkemu::check_launch; using ::fkemu::check_cuda;/mg;
  # A launcher calling another launcher of its file with an argument of X::cuda's
  # own types (fk::cuda::IndexCheck) would also find the real one by
  # argument-dependent lookup: ambiguous. A parenthesized name turns ADL off.
  for my $fn ($s =~ /^void (launch_\w+)\(/mg) {
    $s =~ s/^(\s+)$fn\(/$1($fn)(/mg;
  }
}
# The runtime calls the emulator answers; in a whole program, those that
# take a kernel's pointer only (cuda_runtime.h's C++ overloads for them are
# nvcc's alone), the others reaching libraries/cudart_*.cpp as written.
for my $call ($whole ? qw(FuncSetAttribute FuncGetAttributes OccupancyMaxActiveBlocksPerMultiprocessor)
                     : @emulated) {
  (my $snake = $call) =~ s/([a-z])([A-Z])/$1_\l$2/g;
  $s =~ s/\bcuda$call\(/::fkemu::\l$snake(/g;
}
# Cooperative groups: the emulator's grid; a cooperative kernel's untyped
# name records how to call it (fkemu::kernel_id).
$s =~ s/^#include <cooperative_groups.h>$//m;  # the line kept: #line stays right
$s =~ s/\bcooperative_groups::/::fkemu::cooperative_groups::/g;
$s =~ s/reinterpret_cast<const void\*>\(/::fkemu::kernel_id(/g;
# Dynamic shared memory: the block's buffer of the launch's size.
$s =~ s/extern\s+__shared__\s+(?:__align__\(\d+\)\s*)?([\w:][\w: ]*?)\s+(\w+)\s*\[\s*\]\s*;
       /$1* const $2 = static_cast<$1*>(::fkemu::dynamic_shared());/gx;
# Static shared memory starts as garbage on the device, but a function
# static starts as zeros and keeps the previous block's values: beside each
# declaration, a fkemu::FreshShared fills the variable with 0xff bytes at
# the first thread of each block to reach it (on the declaration's line:
# #line stays right).
my $fresh = 0;
sub fresh_fills {
  my ($declaration) = @_;
  (my $d = $declaration) =~ s/__align__\s*\([^()]*\)//g;
  my ($depth, $piece, @names) = (0, '');
  for my $c (split //, "$d,") {
    $depth += ($c =~ /[\[<(]/) - ($c =~ /[\]>)]/);
    if ($c eq ',' && $depth == 0) {
      (my $bare = $piece) =~ s/\[[^\]]*\]//g;
      die "rewrite_cuda_source.pl: $in: cannot name the variable of `__shared__ $declaration`\n"
        unless $bare =~ /(\w+)\s*$/;
      push @names, $1;
      $piece = '';
    } else {
      $piece .= $c;
    }
  }
  return join('', map {
    ++$fresh;
    " static ::fkemu::FreshShared fkemu_fresh_$fresh; fkemu_fresh_$fresh.fill(&$_, sizeof($_));"
  } @names);
}
$s =~ s/^(\s*__shared__\s+([^;{}]*);)/$1 . fresh_fills($2)/mge;

open(my $oh, '>', $out) or die "rewrite_cuda_source.pl: cannot write $out: $!\n";
print $oh "// Generated by tests/cuda_emu/rewrite_cuda_source.pl from $in: do not edit.\n";
print $oh "#line 1 \"$in\"\n";
print $oh $s;
close $oh;
