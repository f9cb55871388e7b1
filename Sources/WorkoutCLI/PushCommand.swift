import ArgumentParser
import Foundation
import WorkoutFormats
import WorkoutModel
import WorkoutStore
import WorkoutUpload

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `workout push`: uploads stored workouts to a `workout serve` server (as FIT files, imported there by the engine).
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Upload stored workouts to a workout server.",
        discussion: """
            Each workout goes as a FIT file (as `workout export --format fit` writes it) to POST /v1/workouts; \
            the server imports it through its engine. A workout already on the server is reported as such and \
            not stored twice, so pushing again is safe. The exit status is 1 when any workout failed.

            A workout whose live upload (`workout record --upload`) did not finish is not sent as a file: \
            its live session is resumed on the server from the last batch it acknowledged, the rest sent \
            and the session finished, so the server holds it once, under the same id.
            """)

    @OptionGroup var store: StoreOptions

    @Argument(
        help: ArgumentHelp("The workout's id (`workout list` shows them).", valueName: "id"),
        transform: Parse.workoutID)
    var id: UUID?

    @Flag(help: "Push every stored workout.") var all = false

    @Option(help: ArgumentHelp("The server, e.g. http://127.0.0.1:8080.", valueName: "url"))
    var to: String

    @Option(help: ArgumentHelp("The athlete's token (`workout athletes add` printed it).", valueName: "token"))
    var token: String

    @Flag(help: "Print one JSON object per workout.") var json = false

    func validate() throws {
        guard (id != nil) != all else { throw ValidationError("give a workout id or --all (one of them)") }
        guard let url = URL(string: to), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--to '\(to)' is not an http:// or https:// server address")
        }
    }

    func run() async throws {
        let database = try store.open()
        let ids: [UUID]
        if let id {
            ids = [id]
        } else {
            ids = try userFacing { () throws(StoreError) -> [UUID] in
                try database.workoutIDs(matching: WorkoutQuery(ascending: true))
            }
        }
        guard let endpoint = URL(string: to.hasSuffix("/") ? to + "v1/workouts" : to + "/v1/workouts") else {
            throw ValidationError("--to '\(to)' is not a server address")
        }
        var failures = 0
        for id in ids {
            if let spool = try UploadSpoolFiles.read(store: database, id: id) {
                if try await resume(spool, store: database) { continue }
                failures += 1
                continue
            }
            if try await alreadyLive(id, endpoint: endpoint) { continue }
            let (workout, samples, route) = try userFacing {
                () throws(StoreError) -> (Workout, [QuantitySample], [RoutePoint]) in
                guard let workout = try database.workout(id: id) else { throw .workoutNotFound(id) }
                return (workout, try database.samples(workout: id), try database.route(workout: id))
            }
            let bytes = FITExport.encode(workout, samples: samples, route: route)
            var request = URLRequest(url: endpoint)
            request.httpMethod = "POST"
            request.httpBody = Data(bytes)
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            let outcome: (status: Int, body: [String: Any])
            do {
                let (data, response) = try await URLSession.shared.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                outcome = (status, ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:])
            } catch {
                throw UserFacingError(
                    "cannot reach \(to) (\(error.localizedDescription)); is `workout serve` running there? "
                        + "Nothing more was pushed")
            }
            let remote = (outcome.body["workout"] as? [String: Any])?["id"] as? String
            let line: String
            switch outcome.status {
            case 201: line = "pushed \(id) as \(remote ?? "?")"
            case 200: line = "\(id) is already on the server as \(remote ?? "?")"
            default:
                failures += 1
                let error = outcome.body["error"] as? [String: Any]
                let message = error?["message"] as? String ?? "HTTP \(outcome.status)"
                if outcome.status == 401 || outcome.status == 403 {
                    throw UserFacingError("the server refused the token: \(message)")
                }
                line = "\(id) failed: \(message)"
            }
            if json {
                let object: [String: Any] = [
                    "id": id.uuidString, "status": outcome.status, "remote": remote ?? NSNull(),
                    "duplicate": outcome.status == 200, "resumed": false,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                emitLine(String(decoding: data, as: UTF8.self))
            } else {
                emitLine(line)
            }
        }
        if failures > 0 { throw UserFacingError("\(failures) of \(ids.count) workouts were not pushed") }
    }

    /// Whether the server holds workout `id` under the same id (it was uploaded live by `workout record --upload`);
    /// then says so: sending it as a FIT file would store it a second time under the file's id.
    private func alreadyLive(_ id: UUID, endpoint: URL) async throws -> Bool {
        var request = URLRequest(url: endpoint.appendingPathComponent(id.uuidString))
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let status: Int
        do {
            let (_, response) = try await URLSession.shared.data(for: request)
            status = (response as? HTTPURLResponse)?.statusCode ?? 0
        } catch {
            throw UserFacingError(
                "cannot reach \(to) (\(error.localizedDescription)); is `workout serve` running there? Nothing more was pushed")
        }
        if status == 401 { throw UserFacingError("the server refused the token (HTTP 401)") }
        guard status == 200 else { return false }
        if json {
            let object: [String: Any] = [
                "id": id.uuidString, "status": 200, "remote": id.uuidString, "duplicate": true, "resumed": false,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            emitLine(String(decoding: data, as: UTF8.self))
        } else {
            emitLine("\(id) is already on the server as \(id) (uploaded live)")
        }
        return true
    }

    /// Resumes the live upload of a spooled workout; true when the server saved it.
    private func resume(_ spool: UploadSpool, store: WorkoutStore) async throws -> Bool {
        guard let target = UploadTarget(server: to, token: token) else {
            throw ValidationError("--to '\(to)' is not a server address")
        }
        let uploader = LiveUploader(resuming: spool, target: target)
        uploader.start()
        let outcome = await uploader.outcome(timeout: 60)
        let id = spool.session
        let line: String
        let status: Int
        switch outcome {
        case .finished(let batches):
            UploadSpoolFiles.remove(store: store, id: id)
            line = "pushed \(id): resumed its live session, the server saved it (\(batches) batches)"
            status = 200
        case .refused(let problem):
            if problem.hasPrefix("the server refused the token") { throw UserFacingError(problem) }
            line = "\(id) failed: \(problem)"
            status = 0  // the refusal's own status is in the message
        case .incomplete(_, _, let problem):
            throw UserFacingError(
                "cannot reach \(to) (\(problem ?? "no answer")); is `workout serve` running there? Nothing more was pushed")
        }
        if json {
            let object: [String: Any] = [
                "id": id.uuidString, "status": status, "remote": status == 200 ? id.uuidString : NSNull(),
                "duplicate": false, "resumed": true, "error": status == 200 ? NSNull() : line,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            emitLine(String(decoding: data, as: UTF8.self))
        } else {
            emitLine(line)
        }
        return status == 200
    }
}
