import ArgumentParser
import Foundation
import WorkoutFormats
import WorkoutModel
import WorkoutStore

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
                    "duplicate": outcome.status == 200,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                emitLine(String(decoding: data, as: UTF8.self))
            } else {
                emitLine(line)
            }
        }
        if failures > 0 { throw UserFacingError("\(failures) of \(ids.count) workouts were not pushed") }
    }
}
