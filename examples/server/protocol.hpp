// meshplan-server's line protocol, and the worker that answers run requests.
//
// Transport: 127.0.0.1 TCP (`--port P`, 0 picks a free port and prints it) and/or stdin/stdout.
// Every request and every response is one line of text ending in '\n' ("\r\n" is accepted);
// request lines are at most --max-request-bytes (default 16 MiB). A client may send many
// requests without waiting (pipelining): responses come in completion order, each tagged with
// the request's number in its session (#0, #1, ... counting every line the session sent, blank
// lines excepted).
//
// Requests:
//   run NAME [random SEED | SEED] [--input=[INPUT=]SHAPExf32=VALUES]... [check] [tensors]
//       Runs plan NAME. Inputs are all given or none: in plan input order, or each named by
//       its plan input name (--input=x=2x3xf32=...). VALUES is IREE text
//       (--input=2x3xf32=[[1,2,3],[4,5,6]] or --input=2x3xf32=0.5), or `base64:` and the
//       base64 (RFC 4648, padded) of the C-order little-endian f32 bytes of the whole tensor
//       (--input=x=2x3xf32=base64:AACAPwAAAEAAAEBA...). The shape must be the plan input's.
//       With no inputs they are drawn from SEED (default 1) exactly as
//       runtime::random_inputs(plan, SEED) does, so a client can recompute them. `check` also
//       runs the f32 host reference and reports the relative error; `tensors` returns the
//       outputs themselves. File inputs (@x.npy) are refused: the server reads no files for
//       clients.
//   list    names of the plans being served
//   quit    stops the whole server: no new requests are read, queued ones are answered (for at
//           most --shutdown-timeout seconds; later ones get an error), then it exits 0 (as on
//           SIGTERM or SIGINT). Accepted from stdin; from TCP clients only with --remote-admin.
//   reload  loads the cache file again (after meshplan-compile rewrote it) as at start-up: map,
//           verify every entry, bind on every worker's chips, warm up; then swaps the new plans
//           in at once. Requests accepted before the swap finish on the old plans; later ones
//           run on the new. If the file is missing or unreadable, any entry fails
//           verification, or binding or warm-up fails, the old plans keep being served and the
//           error names the file (and the entry). The session waits for the reply; other
//           sessions are served meanwhile. Admin only, as quit; refused under mpirun.
//
// Limits: a session has at most 8 requests queued or running (its further lines are read as
// those are answered), so one pipelining client cannot starve the others. Replies are queued
// per session and written as the client reads them: a client whose unread replies pass 4 MiB
// (one reply into an empty queue is always taken, however long), or stay unread for
// --request-timeout seconds, is disconnected. A connection idle for --idle-timeout seconds, or
// holding an unfinished request line for --request-timeout seconds, gets one error line and is
// closed. Reply lines never carry control bytes (shown as \xNN); echoed names are cut at 256
// bytes.
//
// Responses:
//   ok #ID NAME device_us=T host_us=H outputs=K out0=SHAPE sum0=S absmax0=A xxh0=HEX ...
//       [rel_err=E] [name0=OUTPUT tensor0=SHAPExf32=base64:DATA ...]
//       T: simulated device time; H: host wall time of the run; then per output i: shape
//       (e.g. 64x512), sum and largest |value| of its elements (%.9g; nan when any element is
//       NaN), and XXH3-128 of its f32 bytes (32 hex digits; equal outputs give equal digests).
//       With `tensors`, per output i its plan output name (space, '%' and '=' written %20, %25,
//       %3D) and its values in the input's base64 form.
//   ok #ID plans=N NAME...          (list)
//   bye #ID                         (quit)
//   ok #ID reloaded plans=N bound=K ms=T open_ms=.. verify_ms=.. bind_ms=.. warm_up_ms=..
//       (reload: N verified entries, K of them bound; T the whole reload, warm-up included)
//   error #ID CODE: MESSAGE         the request failed; the server keeps serving. CODE is one
//       of invalid_argument, not_found, incompatible, ... (meshplan::ErrorCode names); a plan
//       whose cache entry is damaged is `corrupt` with the reason.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshplan/device/backend.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

namespace meshplan::server {

/// Longest request line accepted unless --max-request-bytes says otherwise (16 MiB holds 3 M f32
/// values in base64). A connection buffers at most one line: memory for requests is bounded by
/// --max-connections times this.
inline constexpr size_t kDefaultMaxLineBytes = 16u << 20;

/// The registered backends (device/backend.hpp) a worker opens its chips and meshes on.
struct Backends {
  std::string chips;   ///< Single-chip plans: one 1x1 mesh per device.
  std::string meshes;  ///< Mesh plans (under mpirun: "mpi", an MpiMesh over every rank).
};

/// One plan as a worker serves it: bound to a chip (single-chip plans) or to a mesh (mesh
/// plans: host-shaped inputs and outputs).
struct Served {
  std::unique_ptr<runtime::Executable> exe;
  bool on_mesh = false;  ///< A mesh plan: under MPI its runs are announced to the other ranks.

  const runtime::PlanRef& plan() const { return exe->plan(); }
  size_t input_count() const { return exe->input_count(); }
  std::string_view input_name(size_t i) const { return exe->input_name(i); }
  std::span<const int64_t> input_shape(size_t i) const { return exe->input_shape(i); }
  std::string_view output_name(size_t i) const { return exe->output_name(i); }
};

/// A worker thread's state: one chip (a 1x1 mesh) per device and one mesh per mesh the plans
/// target, opened on the backends it was given, and every plan bound to its chip or mesh at
/// start-up. Used by one thread at a time.
class Worker {
 public:
  /// Under MPI (docs/mpi.md): `announce` is called on rank 0 with a mesh plan's index (of
  /// mesh_plan_names()) before it runs, so that the other ranks run it too; `finished` is
  /// called on every rank after each mesh run with whether it succeeded. Both end the MPI job
  /// when the ranks cannot go on together.
  struct MeshRunHooks {
    std::function<void(size_t)> announce;
    std::function<void(bool)> finished;
  };

  /// Binds every plan in `plans` (verified entries of the cache) to a chip of this worker,
  /// taken from `chips` by the device name the plan records. Plans that cannot be bound are
  /// reported in `skipped` (name and reason) and answered with that reason later. Chips open on
  /// backends.chips, each running the cores of big ops on `core_threads` host threads; meshes
  /// open on backends.meshes with the backend's default threads. Plans are served under `names`
  /// (parallel to `plans`: the cache entry names, unique, so a ring and a linear plan of one
  /// model are two plans), or under their graph names when `names` is null.
  static Result<std::unique_ptr<Worker>> create(
      const std::vector<runtime::PlanRef>& plans,
      const std::map<std::string, device::ChipDesc, std::less<>>& chips, unsigned core_threads,
      std::vector<std::string>* skipped, const std::vector<std::string>* names,
      const Backends& backends, bool mesh_only = false);

  void set_hooks(MeshRunHooks hooks) { hooks_ = std::move(hooks); }
  /// The names of the bound mesh plans, in the order of their indices.
  std::vector<std::string> mesh_plan_names() const;
  /// A digest of the bound mesh plans' names and keys (equal on ranks that serve the same).
  Hash128 mesh_plans_digest() const;
  /// A rank other than 0 under MPI: runs mesh plan `index` as rank 0 does, with inputs of the
  /// plan's shapes whose values are never read (rank 0's are scattered to the chips' owners).
  Status follow(size_t index);

  /// Answers one `run ...` request line with the text after "ok #ID " or an error.
  Result<std::string> run(const std::string& line);

  /// Runs every bound plan once with seeded random inputs, so that what a plan's first run
  /// does once (allocations, kernel set-up) happens at start-up, not in a client's request.
  /// `mesh_only`: the mesh plans alone (a rank other than 0 under MPI).
  Status warm_up(bool mesh_only = false);

 private:
  /// Runs a mesh plan between the MPI hooks.
  Result<runtime::RunResult> run_mesh(runtime::Executable& exe,
                                      std::span<const runtime::TensorView> inputs);
  MeshRunHooks hooks_;
  /// Keyed by the chip's name: a 1x1 mesh per device.
  std::map<std::string, std::unique_ptr<device::Mesh>, std::less<>> chips_;
  /// Keyed by the mesh descriptor's hash (hex): one mesh per descriptor.
  std::map<std::string, std::unique_ptr<device::Mesh>, std::less<>> meshes_;
  std::map<std::string, Served, std::less<>> bound_;
  std::map<std::string, std::string, std::less<>> unbound_;  ///< name -> why it is not served
};

}  // namespace meshplan::server
