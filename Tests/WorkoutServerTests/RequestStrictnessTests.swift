import Foundation
import Testing

@testable import WorkoutServer

/// Requests are taken strictly: the token before the parameters, JSON bodies only as application/json and
/// only as strict JSON (no key twice, no trailing comma), 405 with Allow for a method a path is not served
/// with, and the same file uploaded by two athletes is two workouts.
@Suite("request strictness")
struct RequestStrictnessTests {
    @Test("without a token, a bad parameter is 401, not 400")
    func tokenBeforeParameters() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "quinn").token
        for path in [
            "/v1/workouts?limit=abc", "/v1/workouts?bogus=1", "/v1/samples?from=yesterday", "/v1/me?x=1",
            "/v1/workouts/not-a-uuid", "/v1/workouts?" + (0..<40).map { "condition=x\($0)" }.joined(separator: "&"),
        ] {
            let anonymous = try await server.send("GET", path, token: nil)
            #expect(anonymous.status == 401 && anonymous.errorCode == "unauthorized", "\(path): \(anonymous.text)")
            let known = try await server.send("GET", path, token: token)
            #expect(known.status == 400, "\(path): \(known.text)")
        }
        let anonymousPut = try await server.json("PUT", "/v1/sessions/\(UUID())?x=1", token: nil, ["activityType": "running"])
        #expect(anonymousPut.status == 401)
        await server.stop()
    }

    @Test("a JSON body in another content type, or none, is 415")
    func jsonContentType() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "rae").token
        let body = Data(#"{"activityType": "running"}"#.utf8)
        for type in ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream", "application/jsonx"] {
            let answer = try await server.send("PUT", "/v1/sessions/\(UUID())", token: token, body: body, contentType: type)
            #expect(answer.status == 415 && answer.errorCode == "unsupported_media_type", "\(type): \(answer.text)")
        }
        let session = UUID()
        let charset = try await server.send(
            "PUT", "/v1/sessions/\(session)", token: token, body: body, contentType: "Application/JSON; charset=utf-8")
        #expect(charset.status == 201, "\(charset.text)")
        let batch = try await server.send(
            "POST", "/v1/sessions/\(session)/batches", token: token, body: Data(#"{"seq": 1, "items": []}"#.utf8),
            contentType: "text/plain")
        #expect(batch.status == 415, "\(batch.text)")
        // An upload is a FIT file: an image is 415, octet-stream and the FIT types are taken.
        let image = try await server.send("POST", "/v1/workouts", token: token, body: Data([0x89, 0x50, 0x4E, 0x47]), contentType: "image/png")
        #expect(image.status == 415 && image.errorCode == "unsupported_media_type", "\(image.text)")
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await server.send("POST", "/v1/workouts", token: token, body: fit, contentType: "application/vnd.ant.fit")
        #expect(uploaded.status == 201, "\(uploaded.text)")
        await server.stop()
    }

    @Test("a key twice in one object is 400 duplicate_field; a trailing comma is 400 invalid_json")
    func strictJSON() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "sam").token
        let session = UUID()
        func put(_ text: String) async throws -> Answer {
            try await server.send("PUT", "/v1/sessions/\(session)", token: token, body: Data(text.utf8), contentType: "application/json")
        }
        let twice = try await put(#"{"activityType": "running", "activityType": "cycling"}"#)
        #expect(twice.status == 400 && twice.errorCode == "duplicate_field", "\(twice.text)")
        let escapedTwice = try await put(#"{"activityType": "running", "activity\u0054ype": "cycling"}"#)
        #expect(escapedTwice.status == 400 && escapedTwice.errorCode == "duplicate_field", "\(escapedTwice.text)")
        for text in [#"{"activityType": "running",}"#, #"{"activityType": "running"} x"#, #"{"activityType": 'running'}"#] {
            let answer = try await put(text)
            #expect(answer.status == 400 && answer.errorCode == "invalid_json", "\(text): \(answer.text)")
        }
        #expect(try await put(#" {"activityType" : "running"} "#).status == 201)
        let start = iso(Date().addingTimeInterval(-30))
        let path = "/v1/sessions/\(session)/batches"
        func post(_ text: String) async throws -> Answer {
            try await server.send("POST", path, token: token, body: Data(text.utf8), contentType: "application/json")
        }
        // The first seq used to win: batch 1 was taken for batch 2.
        let seqTwice = try await post(#"{"seq": 1, "seq": 2, "items": [{"kind": "start", "at": "\#(start)"}]}"#)
        #expect(seqTwice.status == 400 && seqTwice.errorCode == "duplicate_field", "\(seqTwice.text)")
        #expect(seqTwice.errorMessage?.contains("'seq'") == true, "\(seqTwice.text)")
        let nested = try await post(#"{"seq": 1, "items": [{"kind": "start", "at": "\#(start)", "at": "\#(start)"}]}"#)
        #expect(nested.errorCode == "duplicate_field" && nested.errorMessage?.contains("items[0].at") == true, "\(nested.text)")
        let trailing = try await post(#"{"seq": 1, "items": [{"kind": "start", "at": "\#(start)"},]}"#)
        #expect(trailing.status == 400 && trailing.errorCode == "invalid_json", "\(trailing.text)")
        let deep = try await post(String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000))
        #expect(deep.status == 400 && deep.errorCode == "invalid_json", "\(deep.text.prefix(200))")
        let state = try await server.send("GET", "/v1/sessions/\(session)", token: token)
        #expect(state.json["lastBatch"] as? Int == 0, "nothing was applied: \(state.text)")
        #expect(try await post(#"{"seq": 1, "items": [{"kind": "start", "at": "\#(start)"}]}"#).status == 200)
        await server.stop()
    }

    @Test("a method a path is not served with is 405 with Allow; an unknown path stays 404")
    func methodNotAllowed() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "tea").token
        let cases: [(String, String, String)] = [
            ("DELETE", "/v1/samples", "GET"), ("PATCH", "/v1/sessions/\(UUID())", "GET, PUT"),
            ("PUT", "/v1/workouts", "GET, POST"), ("GET", "/v1/sessions/\(UUID())/batches", "POST"),
            ("POST", "/health", "GET"),
        ]
        for (method, path, allow) in cases {
            let answer = try await server.send(method, path, token: token)
            #expect(answer.status == 405 && answer.errorCode == "method_not_allowed", "\(method) \(path): \(answer.text)")
            #expect(answer.allow == allow, "\(method) \(path): Allow \(String(describing: answer.allow))")
        }
        let missing = try await server.send("GET", "/v1/nothing", token: token)
        #expect(missing.status == 404 && missing.errorCode == "not_found")
        await server.stop()
    }

    @Test("two athletes uploading the same file get two workouts with distinct ids; a coach sees both")
    func sameFileTwoAthletes() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let uma = try server.directory.addAthlete(name: "uma", team: "reds").token
        let vic = try server.directory.addAthlete(name: "vic", team: "reds").token
        let coach = try server.directory.issueCoachToken(team: "reds")
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let first = try await server.send("POST", "/v1/workouts", token: uma, body: fit)
        let second = try await server.send("POST", "/v1/workouts", token: vic, body: fit)
        #expect(first.status == 201 && second.status == 201, "\(first.text) \(second.text)")
        let firstID = try #require((first.json["workout"] as? [String: Any])?["id"] as? String)
        let secondID = try #require((second.json["workout"] as? [String: Any])?["id"] as? String)
        #expect(firstID != secondID)
        // Each athlete still has one: the same file again is a duplicate of its own.
        let again = try await server.send("POST", "/v1/workouts", token: vic, body: fit)
        #expect(again.status == 200 && again.json["duplicate"] as? Bool == true, "\(again.text)")
        #expect((again.json["workout"] as? [String: Any])?["id"] as? String == secondID)
        for (token, id) in [(uma, firstID), (vic, secondID)] {
            let listed = try await server.send("GET", "/v1/workouts", token: token)
            let ids = (listed.json["workouts"] as? [[String: Any]])?.compactMap { ($0["workout"] as? [String: Any])?["id"] as? String }
            #expect(ids == [id], "\(listed.text.prefix(300))")
        }
        let coached = try await server.send("GET", "/v1/workouts", token: coach)
        let athletes = (coached.json["workouts"] as? [[String: Any]])?.compactMap { $0["athlete"] as? String }.sorted()
        #expect(athletes == ["uma", "vic"], "\(coached.text.prefix(300))")
        await server.stop()
    }
}
