// `mri recon` over MPI ranks (batch_mpi.hpp): rank 0 reads and hands out the items to the ranks
// that ask for one (kReady), names each trajectory's leader and relays "leader finished" to the
// ranks whose items wait for its Q; the outcomes come back to rank 0 once every rank is done.
#include "batch_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "../lib/platform/huge_pages.hpp" // libmri's; the receive buffers below, as the file reader's

namespace mri::cli {
namespace {

// Between two polls of MPI when nothing happened. OpenMPI's blocking calls spin a core (its
// shared-memory transport polls), which on a machine with as many cores as ranks is the other
// rank's core: every wait here is MPI_Test / MPI_Iprobe and a sleep instead. 2 ms is a 500th of a
// 1 s slice.
constexpr auto kPoll = std::chrono::milliseconds(2);

void wait(MPI_Request &request) {
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(kPoll);
  }
}

// A barrier that sleeps: ranks done early wait here for the others.
void idle_barrier(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait(r);
}

int count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument("an item of " + std::to_string(n) + " values: over MPI's count limit (INT_MAX) for one message");
  return static_cast<int>(n);
}

enum Tag : int {
  kItem = 1, // rank 0 -> a rank with a free worker: ItemHeader, then the arrays (kPoints .. kCovariance)
  kPoints,
  kSamples,
  kWeights,
  kCovariance,
  kRelease,  // rank 0 -> a rank: Pair{leader, Q stored}: this leader has run, its followers may go on
  kReady,    // a rank -> 0: Pair{item done or kNoItem, failed}: one of its slots is free (Dispatch)
  kEnd,      // rank 0 -> a rank: no more items
  kResult,   // a rank -> 0 after the batch: ResultHeader, then the image, report and error (tags below)
  kResultImage,
  kResultReport,
  kResultError,
};

// What rank 0 tells an item's rank about its Q (ItemHeader::q); >= 0: the leader it waits for.
constexpr std::int64_t kAlone = -1;  // no shared Q (--no-q-share, --normal direct, no key): runs at once
constexpr std::int64_t kLeads = -2;  // first of its trajectory on its host: computes and stores Q
constexpr std::int64_t kStored = -3; // its leader has run: loads Q

// kReady's item when no item ended: a slot free from the start.
constexpr std::int64_t kNoItem = -1;
// Dispatch's owner of an item not handed out (on a rank other than 0: not one of its items).
constexpr int kNobody = -1;

struct ItemHeader {
  std::int64_t item, q, dims, coils, points, samples, weights, covariance;
};
static_assert(sizeof(KPoint) == 3 * sizeof(float), "a trajectory is sent as 3 floats per point");

using Pair = std::array<std::int64_t, 2>;

void send_pair(const Pair &p, int to, int tag) {
  MPI_Send(p.data(), 2, MPI_INT64_T, to, tag, MPI_COMM_WORLD); // eager: returns at once
}

Pair receive_pair(int from, int tag) {
  Pair p{};
  MPI_Recv(p.data(), 2, MPI_INT64_T, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return p;
}

struct Finished {
  std::size_t item;
  bool failed;
};

// Items finished by this rank's workers, for the main thread (the only one calling MPI).
class FinishedItems {
public:
  void push(Finished f) {
    {
      const std::lock_guard lock(mutex_);
      items_.push_back(f);
    }
    changed_.notify_one();
  }
  std::vector<Finished> take() {
    const std::lock_guard lock(mutex_);
    return std::exchange(items_, {});
  }
  // Until an item finishes, or kPoll has passed where messages are due (polled in between).
  void wait(bool messages_due = true) {
    std::unique_lock lock(mutex_);
    const auto finished = [this] { return !items_.empty(); };
    messages_due ? void(changed_.wait_for(lock, kPoll, finished)) : changed_.wait(lock, finished);
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Finished> items_;
};

// This rank's items as they come: followers held until their leader has run.
class Holding {
public:
  explicit Holding(const BatchArrive &arrive) : arrive_(arrive) {}
  void accept(std::size_t item, std::int64_t q) {
    if (q >= 0)
      held_[static_cast<std::size_t>(q)].push_back(item);
    else
      arrive_(item, q == kStored);
  }
  // stored false (the leader failed): the followers settle Q among themselves, as a one-process
  // batch does (the first computes it, the others of this rank wait for that one).
  void release(std::size_t leader, bool stored) {
    for (const std::size_t item : held_[leader]) arrive_(item, stored);
    held_.erase(leader);
  }
  bool none_held() const { return held_.empty(); }

private:
  const BatchArrive &arrive_;
  std::map<std::size_t, std::vector<std::size_t>> held_; // by leader
};

// Rank 0's record of the leaders: one per (trajectory key, host), since ranks load Q from their
// host's cache directory.
class Leaders {
public:
  explicit Leaders(std::vector<int> host_of) : host_of_(std::move(host_of)) {}
  std::int64_t q_of(const std::optional<ToeplitzCacheKey> &key, std::size_t item, int rank) {
    if (!key) return kAlone;
    const int host = host_of_[static_cast<std::size_t>(rank)];
    const auto same = std::find_if(all_.begin(), all_.end(), [&](const Leader &l) { return l.key == *key && l.host == host; });
    if (same == all_.end()) {
      all_.push_back({*key, host, item, false, {}});
      return kLeads;
    }
    if (same->finished) return kStored;
    if (std::find(same->waiting.begin(), same->waiting.end(), rank) == same->waiting.end()) same->waiting.push_back(rank);
    return static_cast<std::int64_t>(same->item);
  }
  // The leader has run: the ranks holding its followers. When it failed, its key has no leader
  // any more: the next item of the key handed out leads.
  std::vector<int> finish(std::size_t item, bool failed) {
    const auto l = std::find_if(all_.begin(), all_.end(), [&](const Leader &x) { return x.item == item; });
    if (l == all_.end()) return {}; // not a leader
    std::vector<int> waiting = std::exchange(l->waiting, {});
    if (failed)
      all_.erase(l);
    else
      l->finished = true;
    return waiting;
  }

private:
  struct Leader {
    ToeplitzCacheKey key;
    int host;
    std::size_t item;
    bool finished;
    std::vector<int> waiting;
  };
  std::vector<int> host_of_;
  std::vector<Leader> all_;
};

// Items a rank holds beyond its workers: the next one it runs, sent while its workers are busy, so
// that a worker that ends starts again at once rather than after the round trip to rank 0 and the
// transfer, idle time that adds up over a batch (docs/history.md, Scaling (history): the 64-slice
// batch over 2 ranks).
constexpr int kAhead = 1;

// Rank 0's hand-out: the items in the order read, each to a free slot of whichever rank (a rank
// has one slot per worker and kAhead more, and says when one is free, kReady), so that a rank
// slowed down takes fewer items. A worker free now comes before a slot ahead of busy workers,
// and the other ranks' before rank 0's: rank 0 also reads the file and feeds the others, and a
// trajectory's first item (computing Q while the others of its key wait) then runs on a core the
// reading does not share (docs/scaling.md). Nothing is handed out before every rank has said its
// slots are free (they do so first thing): else the first item, read before another rank's word
// came, would go to rank 0, and the other rank's first item would wait for Q.
class Dispatch {
public:
  Dispatch(std::size_t items, int ranks, int workers)
      : owner_(items, kNobody), done_(items, false), in_hand_(static_cast<std::size_t>(ranks), 0),
        silent_(static_cast<std::size_t>(ranks), true), workers_(workers), starting_(ranks - 1) {
    silent_[0] = false;
    free_.assign(static_cast<std::size_t>(workers + kAhead), 0);
  }

  void read(std::size_t item) { waiting_.push_back(item); }
  // At the start (every slot of a rank once) or when an item of the rank's has ended.
  void slot_free(int rank, bool at_start) {
    if (at_start && silent_[static_cast<std::size_t>(rank)]) {
      silent_[static_cast<std::size_t>(rank)] = false;
      --starting_;
    }
    free_.push_back(rank);
  }

  struct Assignment {
    std::size_t item;
    int rank;
  };
  // While an item and a slot it may take are both waiting: the next item and the rank to run it.
  std::optional<Assignment> next() {
    if (starting_ > 0 || waiting_.empty()) return std::nullopt;
    const auto slot = pick();
    if (slot == free_.end()) return std::nullopt;
    const int rank = *slot;
    free_.erase(slot);
    const std::size_t item = waiting_.front();
    waiting_.pop_front();
    owner_[item] = rank;
    ++in_hand_[static_cast<std::size_t>(rank)];
    ++handed_out_;
    return Assignment{item, rank};
  }
  // The rank's slot is free again. An item the rank was not given, or one it ran twice, is a
  // broken protocol: the run ends (Ranks::reconstruct).
  void done(std::size_t item, int rank) {
    if (item >= owner_.size() || owner_[item] != rank || done_[item])
      throw std::logic_error("rank " + std::to_string(rank) + " reported item " + std::to_string(item) +
                             " done: not an item it was given, or done twice");
    done_[item] = true;
    ++done_count_;
    --in_hand_[static_cast<std::size_t>(rank)];
    slot_free(rank, false);
  }
  bool all_handed_out() const { return handed_out_ == owner_.size(); }
  bool all_done() const { return done_count_ == owner_.size(); }
  const std::vector<int> &owners() const { return owner_; }

private:
  // The first free slot of a worker free now, another rank's before rank 0's; else the first one
  // ahead, while more items are left to hand out than there are workers in all: the last ones go
  // to workers free now (ahead, one would wait for its rank's running item while a worker idles).
  std::deque<int>::iterator pick() {
    const auto ahead = [&](int rank) { return in_hand_[static_cast<std::size_t>(rank)] >= workers_; };
    const bool may_go_ahead = owner_.size() - handed_out_ > static_cast<std::size_t>(workers_) * silent_.size();
    for (const bool of_busy : {false, true}) {
      if (of_busy && !may_go_ahead) break;
      for (const bool of_rank0 : {false, true}) {
        const auto slot = std::find_if(free_.begin(), free_.end(), [&](int r) { return ahead(r) == of_busy && (r == 0) == of_rank0; });
        if (slot != free_.end()) return slot;
      }
    }
    return free_.end();
  }

  std::deque<std::size_t> waiting_; // read, not handed out yet: no slot was free
  std::vector<int> owner_;
  std::vector<bool> done_;
  std::deque<int> free_;     // one entry per free slot, its rank's, in the order they said so
  std::vector<int> in_hand_; // by rank: items handed out and not done (running, held or queued)
  std::vector<bool> silent_; // by rank: none of its slots said free yet
  int workers_;              // each rank's
  int starting_;             // the ranks still silent
  std::size_t handed_out_ = 0, done_count_ = 0;
};

// An item on its way from rank 0; its arrays live until the sends complete. The samples go
// raw with the noise covariance: the item's rank prewhitens (take_data), as rank 0 would.
struct Outgoing {
  ItemHeader header;
  KSpaceData data;
  std::vector<cdouble> covariance;
  std::array<MPI_Request, 5> requests;

  bool sent() { // lets MPI progress the sends
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    return done != 0;
  }
};

void send_item(Outgoing &m, std::size_t item, std::int64_t q, int to) {
  const KSpaceData &d = m.data;
  m.header = {static_cast<std::int64_t>(item), q, d.trajectory().dims(), d.coils(), static_cast<std::int64_t>(d.trajectory().size()),
              static_cast<std::int64_t>(d.samples().size()), static_cast<std::int64_t>(d.weights().size()),
              static_cast<std::int64_t>(m.covariance.size())};
  MPI_Isend(&m.header, sizeof(ItemHeader), MPI_BYTE, to, kItem, MPI_COMM_WORLD, &m.requests[0]);
  MPI_Isend(d.trajectory().data(), count(3 * d.trajectory().size()), MPI_FLOAT, to, kPoints, MPI_COMM_WORLD, &m.requests[1]);
  MPI_Isend(d.samples().data(), count(d.samples().size()), MPI_C_FLOAT_COMPLEX, to, kSamples, MPI_COMM_WORLD, &m.requests[2]);
  MPI_Isend(d.weights().data(), count(d.weights().size()), MPI_FLOAT, to, kWeights, MPI_COMM_WORLD, &m.requests[3]);
  MPI_Isend(m.covariance.data(), count(m.covariance.size()), MPI_C_DOUBLE_COMPLEX, to, kCovariance, MPI_COMM_WORLD,
            &m.requests[4]);
}

// An item whose header was probed: its data into inputs.problems; returns (item, q).
std::pair<std::size_t, std::int64_t> receive_item(ReconInputs &in, std::vector<int> &owner, int rank) {
  ItemHeader h{};
  MPI_Recv(&h, sizeof(ItemHeader), MPI_BYTE, 0, kItem, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (h.item < 0 || static_cast<std::size_t>(h.item) >= in.problems.size())
    throw InvalidArgument("item " + std::to_string(h.item) + " from rank 0 is not one of the " +
                          std::to_string(in.problems.size()) + " items read here: do the ranks read the same file?");
  int &owned = owner[static_cast<std::size_t>(h.item)];
  if (owned != kNobody) throw std::logic_error("item " + std::to_string(h.item) + " came twice from rank 0");
  owned = rank;
  // An item's ~10 MB is fresh memory each time. Faulted in 4 KiB at a time (microseconds a fault
  // on a virtual machine) it takes this rank's core from its reconstruction, so it goes on huge
  // pages, populated in one call as the reader's arrays are on rank 0
  // (lib/platform/huge_pages.hpp; docs/history.md, Scaling (history)).
  std::vector<KPoint> points;
  std::vector<cfloat> samples;
  std::vector<float> weights;
  detail::resize_on_huge_pages(points, static_cast<std::size_t>(h.points));
  detail::resize_on_huge_pages(samples, static_cast<std::size_t>(h.samples));
  detail::resize_on_huge_pages(weights, static_cast<std::size_t>(h.weights));
  std::vector<cdouble> covariance(static_cast<std::size_t>(h.covariance));
  std::array<MPI_Request, 4> r{};
  MPI_Irecv(points.data(), count(3 * points.size()), MPI_FLOAT, 0, kPoints, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(samples.data(), count(samples.size()), MPI_C_FLOAT_COMPLEX, 0, kSamples, MPI_COMM_WORLD, &r[1]);
  MPI_Irecv(weights.data(), count(weights.size()), MPI_FLOAT, 0, kWeights, MPI_COMM_WORLD, &r[2]);
  MPI_Irecv(covariance.data(), count(covariance.size()), MPI_C_DOUBLE_COMPLEX, 0, kCovariance, MPI_COMM_WORLD, &r[3]);
  for (MPI_Request &q : r) wait(q);
  in.problems[static_cast<std::size_t>(h.item)].data = KSpaceData(
      Trajectory(static_cast<int>(h.dims), std::move(points)), std::move(samples), std::move(weights), static_cast<int>(h.coils));
  // Set before the first item arrives at a worker (the queue's lock orders it), never changed after.
  if (in.ismrmrd && in.ismrmrd->covariance.empty()) in.ismrmrd->covariance = std::move(covariance);
  return {static_cast<std::size_t>(h.item), h.q};
}

// What every rank's batch shares.
struct Run {
  ReconInputs &in;
  const ReconOptions &options;
  bool share_q; // the leaders' protocol: items share Q through options.q_cache_dir
  int rank, size;
  int workers;              // each rank's: reconstruct_batch's (--jobs, at most the items)
  std::vector<int> host_of; // each rank's host (the world rank of its first rank)
  Progress &progress;       // rank 0's line counts the other ranks' items as they end
  std::vector<int> owner;   // each item's rank (on a rank other than 0: its own items only)
  FinishedItems finished;
};

// Rank 0's feed: reads the file and hands each item out as it is read to a free worker, its own
// or another rank's (Dispatch), relays leaders' ends, and returns once every item has run.
void feed_from_rank0(Run &run, const BatchArrive &arrive) {
  const auto t0 = std::chrono::steady_clock::now();
  Holding here(arrive);
  Leaders leaders(run.host_of);
  Dispatch dispatch(run.in.problems.size(), run.size, run.workers);
  std::list<Outgoing> outgoing;
  const auto hand_out = [&](Dispatch::Assignment a) {
    const std::int64_t q =
        run.share_q ? leaders.q_of(reconstruct_q_key(run.in.problems[a.item].data, run.in.grid, run.options), a.item, a.rank)
                    : kAlone;
    if (a.rank == 0) return here.accept(a.item, q);
    Outgoing &m = outgoing.emplace_back();
    m.data = std::move(run.in.problems[a.item].data);
    if (run.in.ismrmrd) m.covariance = run.in.ismrmrd->covariance;
    send_item(m, a.item, q, a.rank);
  };
  const auto item_done = [&](Finished f, int rank) {
    dispatch.done(f.item, rank);
    if (rank != 0) run.progress.advance(run.options.solver.iterations);
    for (const int r : leaders.finish(f.item, f.failed))
      r == 0 ? here.release(f.item, !f.failed) : send_pair({static_cast<std::int64_t>(f.item), !f.failed}, r, kRelease);
  };
  const auto serve = [&] {
    for (int flag = 1; flag;) {
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, kReady, MPI_COMM_WORLD, &flag, &st);
      if (!flag) break;
      const Pair ready = receive_pair(st.MPI_SOURCE, kReady);
      ready[0] == kNoItem ? dispatch.slot_free(st.MPI_SOURCE, true)
                          : item_done({static_cast<std::size_t>(ready[0]), ready[1] != 0}, st.MPI_SOURCE);
    }
    for (const Finished f : run.finished.take()) item_done(f, 0);
    while (const std::optional<Dispatch::Assignment> a = dispatch.next()) hand_out(*a);
    outgoing.remove_if([](Outgoing &m) { return m.sent(); });
  };
  read_problems(run.in, [&](std::size_t i) {
    dispatch.read(i);
    serve();
  });
  run.in.source["read_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto serve_until = [&](const auto &over) {
    for (serve(); !over(); serve()) run.finished.wait();
  };
  serve_until([&] { return dispatch.all_handed_out(); });
  for (int r = 1; r < run.size; ++r) send_pair({}, r, kEnd);
  serve_until([&] { return dispatch.all_done() && outgoing.empty(); });
  run.owner = dispatch.owners();
}

// The feed of the other ranks: a kReady per free slot, items and releases from rank 0.
void feed_from_messages(Run &run, const BatchArrive &arrive) {
  Holding here(arrive);
  for (int w = 0; w < run.workers + kAhead; ++w) send_pair({kNoItem, 0}, 0, kReady);
  std::size_t running = 0; // received, not finished (held ones included: each holds a slot)
  for (bool ended = false; !ended || running > 0;) {
    bool busy = false;
    for (int flag = 1; flag;) {
      MPI_Status st;
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st); // in the order sent (MPI's non-overtaking)
      if (!flag) break;
      busy = true;
      if (st.MPI_TAG == kItem) {
        const auto [item, q] = receive_item(run.in, run.owner, run.rank);
        ++running;
        here.accept(item, q);
      } else if (st.MPI_TAG == kRelease) {
        const Pair released = receive_pair(0, kRelease);
        here.release(static_cast<std::size_t>(released[0]), released[1] != 0);
      } else {
        (void)receive_pair(0, kEnd);
        ended = true;
      }
    }
    for (const Finished f : run.finished.take()) {
      send_pair({static_cast<std::int64_t>(f.item), f.failed}, 0, kReady);
      --running;
      busy = true;
    }
    // Every slot taken (or no more items), none held for a leader: nothing is due from rank 0
    // until an item here ends, so no polling meanwhile (500 wake-ups a second, each taking the
    // core from this rank's reconstruction).
    const bool full = ended || running == static_cast<std::size_t>(run.workers + kAhead);
    if (!busy) run.finished.wait(!(full && here.none_held()));
  }
}

struct ResultHeader {
  std::int64_t code, image, report, error; // code: kOk, or the failed item's exit code
  double data_in, started, finished;
};

// An item's error as rank 0 reports it: its type kept (the run's exit code), the rank named.
std::exception_ptr error_on_rank(int code, int rank, const std::string &message) {
  const std::string what = "rank " + std::to_string(rank) + ": " + message;
  switch (code) {
  case kUsageError: return std::make_exception_ptr(UsageError(what));
  case kUnsupported: return std::make_exception_ptr(Unsupported(what));
  case kDataError: return std::make_exception_ptr(InvalidArgument(what));
  default: return std::make_exception_ptr(std::runtime_error(what));
  }
}

void send_outcome(const ItemOutcome &o) {
  const std::string report = o.reports.dump();
  const Failure f = o.error ? describe_failure(o.error) : Failure{kOk, {}};
  const ResultHeader h{f.code, static_cast<std::int64_t>(o.image.size()), static_cast<std::int64_t>(report.size()),
                       static_cast<std::int64_t>(f.message.size()), o.data_in, o.started, o.finished};
  MPI_Send(&h, sizeof h, MPI_BYTE, 0, kResult, MPI_COMM_WORLD);
  MPI_Send(o.image.data(), count(o.image.size()), MPI_C_FLOAT_COMPLEX, 0, kResultImage, MPI_COMM_WORLD);
  MPI_Send(report.data(), count(report.size()), MPI_CHAR, 0, kResultReport, MPI_COMM_WORLD);
  MPI_Send(f.message.data(), count(f.message.size()), MPI_CHAR, 0, kResultError, MPI_COMM_WORLD);
}

ItemOutcome receive_outcome(int from, const Grid &output) {
  ResultHeader h{};
  MPI_Recv(&h, sizeof h, MPI_BYTE, from, kResult, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ItemOutcome o;
  o.image = Image(output);
  if (static_cast<std::size_t>(h.image) != o.image.size())
    throw InvalidArgument("rank " + std::to_string(from) + " sent an image of " + std::to_string(h.image) +
                          " voxels for an output of " + std::to_string(o.image.size()));
  std::string report(static_cast<std::size_t>(h.report), '\0'), message(static_cast<std::size_t>(h.error), '\0');
  MPI_Recv(o.image.data(), count(o.image.size()), MPI_C_FLOAT_COMPLEX, from, kResultImage, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Recv(report.data(), count(report.size()), MPI_CHAR, from, kResultReport, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Recv(message.data(), count(message.size()), MPI_CHAR, from, kResultError, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  o.reports = nlohmann::json::parse(report);
  if (h.code != kOk) o.error = error_on_rank(static_cast<int>(h.code), from, message);
  o.data_in = h.data_in, o.started = h.started, o.finished = h.finished;
  return o;
}

// Once every rank is done (a sleeping barrier): the other ranks' outcomes into rank 0's, in item
// order (each rank sends its own in item order: MPI keeps that order); rank 0's own errors named
// with its rank too.
void gather(std::vector<ItemOutcome> &out, const Run &run) {
  for (std::size_t i = 0; i < out.size(); ++i)
    if (run.owner[i] == run.rank)
      for (nlohmann::json &r : out[i].reports) r["rank"] = run.rank;
  idle_barrier(MPI_COMM_WORLD);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int owner = run.owner[i];
    if (run.rank != 0 && owner == run.rank) send_outcome(out[i]);
    if (run.rank != 0 || owner == 0) continue;
    out[i] = receive_outcome(owner, run.in.output);
  }
  if (run.rank != 0) return;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (run.owner[i] == 0 && out[i].error) {
      const Failure f = describe_failure(out[i].error);
      out[i].error = error_on_rank(f.code, 0, f.message);
    }
}

// Each rank's host, as the world rank of the host's first rank; and that host's communicator.
std::vector<int> hosts(MPI_Comm host, int world_size) {
  int first = 0, host_rank = 0, world_rank = 0;
  MPI_Comm_rank(host, &host_rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (host_rank == 0) first = world_rank;
  MPI_Request r;
  MPI_Ibcast(&first, 1, MPI_INT, 0, host, &r);
  wait(r);
  std::vector<int> host_of(static_cast<std::size_t>(world_size));
  MPI_Iallgather(&first, 1, MPI_INT, host_of.data(), 1, MPI_INT, MPI_COMM_WORLD, &r);
  wait(r);
  return host_of;
}

// Without --q-cache: one directory of this run per host, made by the host's first rank and named
// to the others (they share Q through it; it is removed when the run's batch is over).
std::unique_ptr<TemporaryQCache> host_q_cache(ReconOptions &o, MPI_Comm host) {
  int host_rank = 0;
  MPI_Comm_rank(host, &host_rank);
  std::unique_ptr<TemporaryQCache> cache;
  std::string path;
  if (host_rank == 0) path = (cache = std::make_unique<TemporaryQCache>())->path().string();
  int length = static_cast<int>(path.size());
  MPI_Request r;
  MPI_Ibcast(&length, 1, MPI_INT, 0, host, &r);
  wait(r);
  path.resize(static_cast<std::size_t>(length));
  MPI_Ibcast(path.data(), length, MPI_CHAR, 0, host, &r);
  wait(r);
  o.q_cache_dir = path;
  return cache;
}

std::vector<ItemOutcome> distribute(ReconInputs &in, const ReconOptions &options, const BatchOptions &batch,
                                    Progress &progress, int rank, int size) {
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  ReconOptions o = options;
  const bool share_q = batch.share_q && o.solver.normal == Normal::Toeplitz && in.problems.size() > 1;
  const std::unique_ptr<TemporaryQCache> cache = share_q && o.q_cache_dir.empty() ? host_q_cache(o, host) : nullptr;
  const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch.jobs), in.problems.size()));
  Run run{in, o, share_q, rank, size, workers, hosts(host, size), progress, std::vector<int>(in.problems.size(), kNobody), {}};
  ItemFeed feed;
  feed.feed = [&](const BatchArrive &arrive) { rank == 0 ? feed_from_rank0(run, arrive) : feed_from_messages(run, arrive); };
  feed.finished = [&](std::size_t item, bool failed) { run.finished.push({item, failed}); };
  std::vector<ItemOutcome> out = reconstruct_batch(in, o, batch, progress, feed);
  gather(out, run);
  MPI_Comm_free(&host);
  return out;
}

// mpirun (Open MPI, MPICH's Hydra, PMIx launchers) sets one of these in each process it starts.
bool started_by_mpirun() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

// Open MPI on one host: its point-to-point layer ob1 (shared memory, single-copy), named before
// MPI_Init unless the user chose one (mpirun --mca pml X, OMPI_MCA_pml). ob1 is what Open MPI
// ends up with on one host anyway, but left to choose, its MPI_Init first starts UCX and the
// other network layers to see them decline, several times the time of MPI_Init with ob1
// (docs/history.md, Scaling (history)), paid before the batch starts. Across hosts the choice
// stays Open MPI's (UCX over InfiniBand).
void point_to_point_for_one_host() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE"), *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (size && local && std::string(size) == local) setenv("OMPI_MCA_pml", "ob1", 0);
}

} // namespace

std::string mpi_description() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length); // allowed before MPI_Init
  const std::string version(text, static_cast<std::size_t>(length));
  return "MPI: " + version.substr(0, version.find_first_of(",\n"));
}

Ranks::Ranks() {
  if (!started_by_mpirun()) return;
  point_to_point_for_one_host();
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Ranks::~Ranks() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return;
  idle_barrier(MPI_COMM_WORLD); // while rank 0 writes the outputs
  MPI_Finalize();
}

int Ranks::all_or_none(const std::function<void()> &step) const {
  if (size_ == 1) {
    step();
    return kOk;
  }
  std::optional<Failure> failure;
  try {
    step();
  } catch (...) {
    failure = describe_failure(std::current_exception());
  }
  // MINLOC on (rank, code): the first rank that failed, and its code.
  int mine[2] = {failure ? rank_ : size_, failure ? failure->code : kOk}, first[2] = {0, 0};
  MPI_Request r;
  MPI_Iallreduce(mine, first, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD, &r);
  wait(r);
  if (first[0] == rank_) std::fprintf(stderr, "mri: rank %d of %d: %s\n", rank_, size_, failure->message.c_str());
  return first[0] == size_ ? kOk : first[1];
}

std::optional<std::vector<ItemOutcome>> Ranks::reconstruct(ReconInputs &in, const ReconOptions &options,
                                                           const BatchOptions &batch, Progress &progress) const {
  if (size_ == 1) return reconstruct_batch(in, options, batch, progress);
  try {
    std::vector<ItemOutcome> out = distribute(in, options, batch, progress, rank_, size_);
    if (rank_ != 0) return std::nullopt;
    return out;
  } catch (...) { // the others would wait for this rank forever: end them all
    const Failure f = describe_failure(std::current_exception());
    std::fprintf(stderr, "mri: rank %d of %d: %s\n", rank_, size_, f.message.c_str());
    MPI_Abort(MPI_COMM_WORLD, f.code);
    return std::nullopt; // MPI_Abort does not return
  }
}

} // namespace mri::cli
