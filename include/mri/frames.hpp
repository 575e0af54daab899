#pragma once
// Frames from a continuous acquisition: a golden-angle radial (2D, stack of stars) or koosh (3D)
// acquisition sorted afterwards into time frames or respiratory states (docs/dynamic.md).
//
// Layout: the acquisition is readout-major. The trajectory holds R readouts (spokes) of S samples
// each, contiguous (BART's [3, samples, lines] order), and the samples are coil-major as
// KSpaceData stores them (sample m of coil c at c*M + m, M = R*S). Readout r is acquired at
// r * readout_seconds (TR) unless ReadoutLayout::times says otherwise.
//
// A binning assigns readouts (never single samples) to frames. Amplitude bins partition the
// readouts (each in exactly one bin); time frames may overlap (a sliding window) and leave a tail
// that fills no frame, which FrameBinning::unassigned lists.
//
// Respiratory sign convention: a gating signal is oriented so that larger values are further
// from end-expiration (towards inspiration), and amplitude bin 0 holds the lowest values: bin 0 is
// end-expiration. Which end of a signal is expiration is decided from its shape when not given
// (Expiration::Auto): breathing dwells at end-expiration (Lujan et al., Med. Phys. 26:715 (1999):
// the cos^2n model), so the expiration end is the densely populated one, where the median lies
// closer to it than to the other end (percentiles 5 and 95, so that outliers do not decide).
//
// Thread safety: pure functions of their arguments; any number of threads may call them at once.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "mri/kspace.hpp"

namespace mri {

struct ReadoutLayout {
  int samples_per_readout = 0;  // S: samples of one readout (spoke), > 0
  double readout_seconds = 0;   // TR: time between consecutive readouts, > 0
  std::vector<double> times;    // optional: the acquisition time of each readout (seconds),
                                // non-decreasing; empty: readout r at r * readout_seconds
};

// The fewest readouts a frame or bin may hold: fewer is almost always a wrong --bins or
// --frames-spokes (a frame of 8 spokes is already far below any useful sampling).
inline constexpr std::int64_t kMinReadoutsPerFrame = 8;

// R = trajectory size / samples_per_readout. Throws InvalidArgument naming
// layout.samples_per_readout when it is not positive or does not divide the trajectory size,
// layout.readout_seconds when not positive and finite, layout.times when its length is not R or a
// time is not finite or decreases.
std::int64_t readout_count(const KSpaceData &data, const ReadoutLayout &layout);

// The layout of readouts whose acquisition clock reads `stamps` (one per readout, in ticks of
// tick_seconds: ISMRMRD's acquisition_time_stamp, 2.5 ms on Siemens and in `mri phantom`'s files):
// times = (stamp - first stamp) x tick, readout_seconds = their mean spacing (exact for a constant
// TR even where the ticks are coarser than it). Throws InvalidArgument naming stamps (fewer than 2,
// decreasing, or not advancing from first to last) or tick_seconds (not positive).
ReadoutLayout layout_from_time_stamps(int samples_per_readout, std::span<const std::uint32_t> stamps,
                                      double tick_seconds = 2.5e-3);

enum class BinningMethod { Time, Amplitude };
enum class Expiration {
  Auto, // from the signal's shape (header comment)
  Low,  // the signal's low end is end-expiration (kept as given)
  High  // the high end is (the signal is negated)
};

// A respiratory (or any) surrogate signal, one value per readout, and how it was obtained.
struct GatingSignal {
  std::vector<double> values;
  std::string source;               // "self-gating", "user", a file name, "header"
  bool breathing_peak_found = true; // self-gating: a spectral peak in the breathing band
  double peak_hz = 0;               // self-gating: frequency of that peak
  double peak_ratio = 0;            // self-gating: peak power / median power above the band
  std::string note;
};

struct FrameBinning {
  BinningMethod method = BinningMethod::Time;
  std::string source;                            // "time" or the gating signal's source
  std::vector<double> signal;                    // amplitude: the oriented signal (per readout)
  std::vector<double> bin_edges;                 // amplitude: bins + 1 values; bin b holds
                                                 // edges[b] <= s <= edges[b + 1]; time: empty
  std::vector<std::vector<std::int64_t>> frames; // readout indices of each frame, ascending
  std::vector<std::int64_t> readouts_per_frame;  // frames[f].size()
  std::vector<std::int64_t> unassigned;          // readouts in no frame (time frames' tail)
  bool flipped = false;                          // amplitude: the signal was negated
  std::string note;                              // what was decided and why, for the report
};

// Time frames of `readouts_per_frame` consecutive readouts starting every `step` readouts (0:
// step = readouts_per_frame, disjoint frames; smaller: a sliding window). Throws InvalidArgument
// naming readouts_per_frame (below kMinReadoutsPerFrame or above readouts) or step (negative or
// above readouts_per_frame: readouts between frames would be dropped).
FrameBinning bin_by_time(std::int64_t readouts, std::int64_t readouts_per_frame, std::int64_t step = 0);

// Amplitude bins with equal counts (sizes differ by at most one; ties broken by time), bin 0 at
// end-expiration (header comment). Throws InvalidArgument naming signal (a value not finite, or
// constant) or bins (below 1, or leaving fewer than kMinReadoutsPerFrame readouts per bin).
FrameBinning bin_by_amplitude(std::span<const double> signal, int bins, Expiration expiration = Expiration::Auto);
FrameBinning bin_by_amplitude(const GatingSignal &signal, int bins, Expiration expiration = Expiration::Auto);

struct SelfGatingOptions {
  double low_hz = 0.1;        // breathing band (6 to 30 breaths a minute)
  double high_hz = 0.5;
  double window_seconds = 30; // principal component over sliding windows of this length (half
                              // overlapping); a shorter acquisition is one window
  double peak_ratio = 100;    // a breathing peak: in-band periodogram maximum at least this many
                              // times the median periodogram above the band (tests/dynamic's
                              // 2D radial at SNR 30: 3-20.5 without breathing, ~1e4 with it;
                              // the phantom files' 7e4-1e6)
};

// The respiratory signal from the data (XD-GRASP, Feng et al., MRM 75:775 (2016)): the k-space
// centre sample of every readout (the sample nearest k = 0), all coils (real and imaginary parts
// as 2C features), its mean per centre position removed (stack of stars: per partition), each
// feature band-passed to [low_hz, high_hz] (raised-cosine edges down to low_hz / 2 and up to
// 1.5 high_hz), then the principal component of the band-passed features over sliding windows
// (signs aligned on the overlaps, windows blended), oriented as the header comment says.
// Band-passing before the principal component makes the component the one with the most
// breathing-band variance; XD-GRASP instead picks, among the components, the one with the
// strongest breathing peak. The note says when no breathing peak is found (the signal is
// returned all the same). Throws as readout_count, InvalidArgument naming options.* for a band
// that is empty, negative or above the Nyquist frequency 1 / (2 TR), and naming data when there are
// fewer than 2 kMinReadoutsPerFrame readouts.
GatingSignal self_gating_signal(const KSpaceData &data, const ReadoutLayout &layout,
                                const SelfGatingOptions &options = {});

// A signal given by the user: InvalidArgument naming `name` when its length is not `readouts`,
// a value is not finite, or it is constant.
GatingSignal gating_signal(std::vector<double> values, std::int64_t readouts, const std::string &name = "signal");
// A signal from a file: a BART array (base name, or .cfl / .hdr: the real parts, readouts values)
// or a text file of one number per line ('#' starts a comment). IoError for an unreadable file;
// InvalidArgument as gating_signal.
GatingSignal read_gating_signal(const std::filesystem::path &path, std::int64_t readouts);

// One KSpaceData per frame: its readouts' trajectory points and samples in the frame's order,
// every coil, their weights and sample times where the data have them. Throws as readout_count,
// and InvalidArgument naming binning.frames when a frame is empty or names a readout outside
// [0, R).
std::vector<KSpaceData> split_frames(const KSpaceData &data, const ReadoutLayout &layout,
                                     const FrameBinning &binning);

// What `mri recon --bins N [--gating self|header|FILE] [--frames-spokes K]` asks for.
struct FrameRequest {
  int bins = 0;                    // respiratory states by amplitude (0: time frames)
  std::string gating = "self";     // "self", "header" (header_signal) or a signal file
  std::int64_t frames_readouts = 0; // time frames of this many readouts (needs bins == 0)
  std::int64_t frames_step = 0;    // time frames' step (0: disjoint)
  bool fall_back_to_time = false;  // self-gating without a breathing peak: `bins` time frames
  Expiration expiration = Expiration::Auto;
  SelfGatingOptions self_gating;
};

// The binning a request asks for: amplitude bins of the named signal, or time frames. Throws
// InvalidArgument naming request.bins / request.frames_readouts (neither or both given),
// header_signal (gating "header" without one), and what the binning functions throw.
FrameBinning plan_frames(const KSpaceData &data, const ReadoutLayout &layout, const FrameRequest &request,
                         std::span<const double> header_signal = {});

} // namespace mri
