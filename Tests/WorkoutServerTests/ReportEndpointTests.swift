import Foundation
import Testing
import WorkoutServer

/// `GET /v1/workouts/{id}/report`: the self-contained HTML page of `workout report`, read like a workout.
@Suite("server report endpoint", .serialized)
struct ReportEndpointTests {
    @Test(arguments: Backend.available)
    func theReportIsTheWorkoutsOwnPageForTokensThatMayReadIt(_ backend: Backend) async throws {
        let server = try await TestServer.start(backend: backend)
        defer { server.remove() }
        let owner = try server.directory.addAthlete(name: "zoe", team: "club").token
        let stranger = try server.directory.addAthlete(name: "abe").token
        let coach = try server.directory.issueCoachToken(team: "club")
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await server.send("POST", "/v1/workouts", token: owner, body: fit)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let workout = try #require(uploaded.json["workout"] as? [String: Any])
        let id = try #require(workout["id"] as? String)
        let path = "/v1/workouts/\(id)/report"

        let page = try await server.send("GET", path, token: owner)
        #expect(page.status == 200, "\(page.text.prefix(300))")
        let html = page.text
        #expect(html.lowercased().hasPrefix("<!doctype html>"), "\(html.prefix(100))")
        #expect(html.contains("</html>") && html.contains("<svg"), "a whole page with its charts")
        // Self-contained: nothing is fetched when viewing (no external scripts, styles or images).
        for reference in ["src=\"http", "href=\"http", "src='http", "@import", "url(http"] {
            #expect(!html.contains(reference), "the page loads \(reference)…")
        }
        // The activity it reports: the workout's own heart-rate average appears on the page, rounded.
        let statistics = workout["statistics"] as? [String: Any]
        let average = ((statistics?["heartRate"] as? [String: Any])?["average"] as? [String: Any])?["value"] as? Double
        let shown = try #require(average.map { String(Int($0.rounded())) })
        #expect(html.contains(shown), "the average heart rate \(shown) is on the page")

        #expect(try await server.send("GET", path, token: coach).status == 200, "the team's coach reads it")
        #expect(try await server.send("GET", path + "?athlete=zoe", token: coach).status == 200)
        let other = try await server.send("GET", path, token: stranger)
        #expect(other.status == 404 && other.errorCode == "not_found", "another athlete's token: \(other.text)")
        let named = try await server.send("GET", path + "?athlete=zoe", token: stranger)
        #expect(named.status == 403 && named.errorCode == "forbidden", "\(named.text)")
        #expect(try await server.send("GET", path, token: nil).status == 401)
        let missing = try await server.send("GET", "/v1/workouts/\(UUID())/report", token: owner)
        #expect(missing.status == 404 && missing.errorCode == "not_found")
        let badZones = try await server.send("GET", path + "?maxHeartRate=abc", token: owner)
        #expect(badZones.status == 400 && badZones.errorCode == "invalid_parameter", "\(badZones.text)")
        let inverted = try await server.send("GET", path + "?maxHeartRate=50&restingHeartRate=60", token: owner)
        #expect(inverted.status == 400, "\(inverted.text)")
        let unknown = try await server.send("GET", path + "?zones=5", token: owner)
        #expect(unknown.status == 400 && unknown.errorCode == "unknown_parameter")
        await server.stop()
    }
}
