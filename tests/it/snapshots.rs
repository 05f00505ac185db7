//! Chat state snapshots over stdio: two worked examples of the flow (which messages get ids, on
//! which base), swipes, dangling ids, deleted chats, cleanup, every built-in, user JavaScript
//! functions (and runaway ones), malformed calls, MVU metadata, the function export format, the
//! prompt and the resources.

use pretty_assertions::assert_eq;
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden, assert_golden_text, call, is_error, manifest,
    spawn_binary, text,
};

/// A client that approves what it is asked: the tools that delete snapshots ask first.
async fn client() -> Client {
    spawn_binary(
        &[],
        TestClient::new(Elicitation::Accept(
            json!({"approve": true, "remember": true}),
        )),
    )
    .await
}

pub(crate) async fn ok(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert!(!is_error(&result), "{tool} failed: {}", text(&result));
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{tool}: no structured content: {}", text(&result)))
}

/// `examples/sillytavern_chat.json`: `{chatFile, characterId, template, messages}`.
pub(crate) fn example() -> Value {
    let text = std::fs::read_to_string(manifest("examples/sillytavern_chat.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Turns on a shipped function of the global library that starts disabled (`MVU`, `JSON_PATCH`).
pub(crate) async fn enable_shipped(client: &Client, name: &str) {
    let listed = ok(client, "FunctionList", json!({})).await;
    let mut function = listed["global"]
        .as_array()
        .unwrap()
        .iter()
        .find(|function| function["name"] == name)
        .unwrap_or_else(|| panic!("no shipped function `{name}` in {listed}"))
        .clone();
    function["enabled"] = json!(true);
    ok(client, "FunctionUpsert", json!({"function": function})).await;
}

pub(crate) async fn refused(client: &Client, tool: &str, arguments: Value) -> String {
    let result = call(client, tool, arguments).await;
    assert!(is_error(&result), "{tool} should fail: {}", text(&result));
    text(&result)
}

fn ai(swipe_id: usize, swipes: &[&str]) -> Value {
    json!({"is_user": false, "swipe_id": swipe_id, "swipes": swipes, "swipes_info": swipes.iter().map(|_| json!({})).collect::<Vec<_>>()})
}

fn user(text: &str) -> Value {
    json!({"is_user": true, "mes": text, "swipe_id": 0, "swipes": [text]})
}

/// Writes `bindings` back into the messages, as a client does.
fn bind(messages: &mut [Value], processed: &Value) {
    for binding in processed["bindings"].as_array().unwrap() {
        let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
        let swipe = usize::try_from(binding["swipeId"].as_u64().unwrap()).unwrap();
        messages[index]["swipes_info"][swipe]["st_var_system_snapshot_id"] =
            binding["snapshotId"].clone();
    }
}

fn indexes(processed: &Value) -> Vec<(u64, u64)> {
    processed["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|binding| {
            (
                binding["messageIndex"].as_u64().unwrap(),
                binding["swipeId"].as_u64().unwrap(),
            )
        })
        .collect()
}

async fn snapshot(client: &Client, id: &Value) -> Value {
    ok(client, "SnapshotGet", json!({"id": id})).await["snapshot"].clone()
}

/// Seed §1.3, example 2: no message has an id, so the template is the base and messages 0-2,
/// 2-1 and 4-1 each get a snapshot (C, D, E), each built on the one before.
#[tokio::test]
async fn seed_example_two_builds_every_snapshot_from_the_template() {
    let client = client().await;
    ok(&client, "TemplateSet", json!({"characterId": "hero", "template": {"角色": {"名字": "无名", "金币": 500}, "背包": []}})).await;
    let messages = vec![
        ai(
            2,
            &[
                "swipe 0",
                "swipe 1",
                "开场白 @.SET(\"角色.名字\", \"张三\");",
            ],
        ),
        user("你好"),
        ai(
            1,
            &[
                "@.ADD(\"角色.金币\", 999);",
                "好的 @.ADD(\"角色.金币\", 100);",
            ],
        ),
        user("买药"),
        ai(
            1,
            &[
                "x",
                "@.APPEND(\"背包\", \"治疗药水\"); @.SUB(\"角色.金币\", 50);",
            ],
        ),
    ];
    let processed = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "hero-1", "messages": messages, "characterId": "hero"}),
    )
    .await;
    assert_eq!(indexes(&processed), vec![(0, 2), (2, 1), (4, 1)]);
    assert_eq!(processed["base"], json!({"kind": "template"}));
    assert_eq!(processed["errors"], json!([]));
    let ids: Vec<Value> = processed["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|binding| binding["snapshotId"].clone())
        .collect();
    assert_eq!(
        snapshot(&client, &ids[0]).await,
        json!({"角色": {"名字": "张三", "金币": 500}, "背包": []})
    );
    assert_eq!(
        snapshot(&client, &ids[1]).await,
        json!({"角色": {"名字": "张三", "金币": 600}, "背包": []})
    );
    let e = json!({"角色": {"名字": "张三", "金币": 550}, "背包": ["治疗药水"]});
    assert_eq!(snapshot(&client, &ids[2]).await, e);
    assert_eq!(processed["vs_stat_data"], e);
    assert_eq!(processed["latestSnapshotId"], ids[2]);
    for id in &ids {
        let uuid = id.as_str().unwrap();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "a UUID v4: {uuid}");
    }
}

/// Seed §1.3, example 1: 2-1 is bound to snapshot A, 0-2 and 4-1 are not; only 4-1 is
/// processed, on top of A. Then swipe switching, and a newest message that is already bound.
#[tokio::test]
async fn seed_example_one_builds_on_the_nearest_bound_message_and_swipes_branch() {
    let client = client().await;
    let mut messages = vec![
        ai(2, &["", "", "@.SET(\"金币\", 10);"]),
        user("hi"),
        ai(1, &["", "@.ADD(\"金币\", 5);"]),
    ];
    let first = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "c", "messages": messages}),
    )
    .await;
    let snapshot_a = first["bindings"][1]["snapshotId"].clone();
    messages[2]["swipes_info"][1]["st_var_system_snapshot_id"] = snapshot_a.clone();
    messages.push(user("go"));
    messages.push(ai(1, &["@.ADD(\"金币\", 1000);", "@.ADD(\"金币\", 1);"]));

    let processed = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "c", "messages": messages}),
    )
    .await;
    assert_eq!(indexes(&processed), vec![(4, 1)]);
    assert_eq!(
        processed["base"],
        json!({"kind": "snapshot", "messageIndex": 2, "snapshotId": snapshot_a})
    );
    assert_eq!(processed["vs_stat_data"], json!({"金币": 16}));
    bind(&mut messages, &processed);

    // Bound already: nothing to do, the bound snapshot is the state.
    let again = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "c", "messages": messages}),
    )
    .await;
    assert_eq!(again["bindings"], json!([]));
    assert_eq!(again["vs_stat_data"], json!({"金币": 16}));

    // Another swipe of the newest message is another branch, on the same base.
    messages[4]["swipe_id"] = json!(0);
    let swiped = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "c", "messages": messages}),
    )
    .await;
    assert_eq!(indexes(&swiped), vec![(4, 0)]);
    assert_eq!(swiped["vs_stat_data"], json!({"金币": 1015}));
    bind(&mut messages, &swiped);
    messages[4]["swipe_id"] = json!(1);
    let back = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "c", "messages": messages}),
    )
    .await;
    assert_eq!(
        (back["bindings"].clone(), back["vs_stat_data"].clone()),
        (json!([]), json!({"金币": 16}))
    );
}

#[tokio::test]
async fn dangling_ids_are_dropped_and_deleted_chats_start_over() {
    let client = client().await;
    let mut messages = vec![
        ai(0, &["@.SET(\"n\", 1);"]),
        user("a"),
        ai(0, &["@.ADD(\"n\", 1);"]),
    ];
    messages[2]["swipes_info"][0]["st_var_system_snapshot_id"] =
        json!("00000000-dead-4000-8000-000000000000");
    let processed = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "d", "messages": messages}),
    )
    .await;
    assert_eq!(
        processed["dropped"],
        json!([{"messageIndex": 2, "swipeId": 0, "snapshotId": "00000000-dead-4000-8000-000000000000"}])
    );
    assert_eq!(indexes(&processed), vec![(0, 0), (2, 0)]);
    assert_eq!(processed["vs_stat_data"], json!({"n": 2}));
    bind(&mut messages, &processed);

    let deleted = ok(&client, "SnapshotDeleteChat", json!({"chatFile": "d"})).await;
    assert_eq!(deleted, json!({"chatFile": "d", "deleted": 2}));
    let gone = refused(
        &client,
        "SnapshotGet",
        json!({"id": processed["latestSnapshotId"]}),
    )
    .await;
    assert_golden_text("snapshots/get-deleted-chat.txt", &gone);
    let redone = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "d", "messages": messages}),
    )
    .await;
    assert_eq!(redone["dropped"].as_array().unwrap().len(), 2);
    assert_eq!(redone["vs_stat_data"], json!({"n": 2}));
}

#[tokio::test]
async fn cleanup_removes_chats_that_are_no_longer_active() {
    let client = client().await;
    for chat in ["keep", "old-1", "old-2"] {
        ok(
            &client,
            "SnapshotApply",
            json!({"chatFile": chat, "text": "@.SET(\"a\", 1);"}),
        )
        .await;
    }
    let cleaned = ok(
        &client,
        "SnapshotCleanup",
        json!({"activeChatFiles": ["keep", "never-had-any"]}),
    )
    .await;
    assert_eq!(
        cleaned,
        json!({"removed": [{"chatFile": "old-1", "deleted": 1}, {"chatFile": "old-2", "deleted": 1}], "deleted": 2})
    );
    let again = ok(
        &client,
        "SnapshotCleanup",
        json!({"activeChatFiles": ["keep"]}),
    )
    .await;
    assert_eq!(again["deleted"], json!(0));
}

#[tokio::test]
async fn every_builtin_applies_and_malformed_calls_are_skipped_and_reported() {
    let client = client().await;
    let text = r#"故事开始。
@.SET("角色.名字", "张三");
@.SET("角色.描述", "他说：\"走吧\"); 然后 (笑)");
@.ADD("角色.金币", 100);
@.SUB("角色.生命值", 10);
@.APPEND("背包", "治疗药水");
@.APPEND("背包", {"名": "剑", "伤害": [1, 2]});
@.REMOVE("背包", 0);
@.ASSIGN("角色", {"等级": 2});
@.SET("临时数据", {"flag": true});
@.UNSET("临时数据.flag");
@.TIME("2024-10-20T15:30:00Z");
@.ADD("角色.名字", 1);
@.SET("坏的", 张三);
@.SET("多行",
  [1,
   2]
);"#;
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "b", "text": text}),
    )
    .await;
    assert_eq!(
        applied["snapshot"],
        json!({
            "角色": {"名字": "张三", "描述": "他说：\"走吧\"); 然后 (笑)", "金币": 100, "生命值": -10, "等级": 2},
            "背包": [{"名": "剑", "伤害": [1, 2]}],
            "临时数据": {},
            "time": "2024-10-20T15:30:00Z",
            "多行": [1, 2]
        })
    );
    let errors = applied["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_golden(
        "tests/golden/snapshots/apply-errors.json",
        &applied["errors"],
    );
    let position = usize::try_from(errors[1]["position"].as_u64().unwrap()).unwrap();
    assert!(
        text.chars()
            .skip(position)
            .collect::<String>()
            .starts_with("@.SET(\"坏的\"")
    );
}

#[tokio::test]
async fn user_functions_run_in_javascript_and_runaway_ones_are_stopped() {
    let client = client().await;
    let give = ok(&client, "FunctionUpsert", json!({"function": {
        "name": "GIVE", "type": "active", "order": 1, "description": "给予物品",
        "pattern": "@\\.GIVE\\(\"([^\"]+)\",\\s*(\\d+)\\);?",
        "executor": "const [item, count] = args; const bag = _.get(snapshot, '背包', {}); bag[item] = (bag[item] || 0) + count; _.set(snapshot, '背包', bag); return snapshot;"
    }})).await;
    assert_eq!(give["id"].as_str().unwrap().len(), 36);
    ok(&client, "FunctionUpsert", json!({"function": {
        "name": "回合", "type": "passive", "timing": "after_active", "order": 1, "description": "每回合加一",
        "executor": "snapshot.回合 = (snapshot.回合 || 0) + 1;"
    }})).await;
    ok(
        &client,
        "FunctionUpsert",
        json!({"function": {
            "name": "开场", "type": "passive", "timing": "before_active", "order": 1,
            "executor": "snapshot.x = 0; snapshot.回合 = 100; return snapshot;"
        }}),
    )
    .await;
    ok(&client, "FunctionUpsert", json!({"function": {
        "name": "LOOP", "type": "active", "pattern": "@\\.LOOP\\(\\);", "executor": "while (true) {}"
    }})).await;
    ok(&client, "FunctionUpsert", json!({"function": {
        "name": "HOG", "type": "active", "pattern": "@\\.HOG\\(\\);", "executor": "const a = []; while (true) a.push('x'.repeat(1e6) + a.length);"
    }})).await;

    let applied = ok(&client, "SnapshotApply", json!({"chatFile": "js", "text": "@.GIVE(\"剑\", 2); @.LOOP(); @.SET(\"x\", 1); @.HOG(); @.GIVE(\"剑\", 1);"})).await;
    assert_eq!(
        applied["snapshot"],
        // before_active (x = 0, 回合 = 100), the calls in text order, after_active (回合 + 1).
        json!({"x": 1, "回合": 101, "背包": {"剑": 3}})
    );
    let errors = applied["errors"].as_array().unwrap();
    let names: Vec<&str> = errors
        .iter()
        .map(|error| error["function"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["LOOP", "HOG"], "{errors:?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("stopped after"),
        "{errors:?}"
    );
    let hog = errors[1]["message"].as_str().unwrap();
    assert!(
        hog.contains("memory") || hog.contains("stopped after"),
        "{hog}"
    );

    let broken = refused(&client, "FunctionUpsert", json!({"function": {"name": "BAD", "type": "active", "pattern": "(", "executor": "return snapshot"}})).await;
    assert_golden_text("snapshots/upsert-bad-regex.txt", &broken);
    let broken = refused(&client, "FunctionUpsert", json!({"function": {"name": "BAD", "type": "passive", "timing": "before_active", "executor": "return (;"}})).await;
    assert_golden_text("snapshots/upsert-does-not-compile.txt", &broken);
    let builtin = refused(
        &client,
        "FunctionRemove",
        json!({"id": "00000000-0000-4000-8000-000000000001"}),
    )
    .await;
    assert_golden_text("snapshots/remove-built-in.txt", &builtin);
}

#[tokio::test]
async fn mvu_syntaxes_and_metadata() {
    let client = client().await;
    enable_shipped(&client, "MVU").await;
    enable_shipped(&client, "JSON_PATCH").await;

    let template = json!({"$meta": {"extensible": true}, "角色": {"金币": 5, "$meta": {"x": 1}}, "背包": ["$__META_EXTENSIBLE__$", "剑"]});
    let set = ok(
        &client,
        "TemplateSet",
        json!({"characterId": "mvu", "template": template, "mvuStrip": true}),
    )
    .await;
    assert_eq!(
        set["template"],
        json!({"角色": {"金币": 5}, "背包": ["剑"]})
    );
    let applied = ok(&client, "SnapshotApply", json!({"chatFile": "m", "characterId": "mvu", "text": "_.set('角色.金币', 5, 7);//赚钱\n<JSONPatch>[{\"op\": \"add\", \"path\": \"/背包/-\", \"value\": \"盾\"}]</JSONPatch>"})).await;
    assert_eq!(
        applied["snapshot"],
        json!({"角色": {"金币": 7}, "背包": ["剑", "盾"]})
    );
    let updated = ok(&client, "SnapshotUpdate", json!({"id": applied["snapshotId"], "snapshot": {"a": {"$meta": 1, "b": 2}}, "mvuStrip": true})).await;
    assert_eq!(updated["snapshot"], json!({"a": {"b": 2}}));
    assert_eq!(updated["id"], applied["snapshotId"]);

    // Kept with its metadata, then read and saved globally without it.
    let id = &applied["snapshotId"];
    let with_meta = json!({"a": {"$meta": 1, "b": 2}, "c": ["$__META_EXTENSIBLE__$", 3]});
    ok(
        &client,
        "SnapshotUpdate",
        json!({"id": id, "snapshot": with_meta}),
    )
    .await;
    let plain = json!({"a": {"b": 2}, "c": [3]});
    let got = ok(&client, "SnapshotGet", json!({"id": id})).await;
    assert_eq!(got["snapshot"], with_meta);
    let got = ok(&client, "SnapshotGet", json!({"id": id, "mvuStrip": true})).await;
    assert_eq!(got["snapshot"], plain);
    let saved = ok(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "from-chat", "from": id, "mvuStrip": true}),
    )
    .await;
    let given = ok(
        &client,
        "SnapshotGlobalSave",
        json!({"label": "given", "snapshot": with_meta, "mvuStrip": true}),
    )
    .await;
    for label in ["from-chat", "given"] {
        let global = ok(&client, "SnapshotGlobalGet", json!({"id": label})).await;
        assert_eq!(global["snapshot"], plain, "{label}: {saved} {given}");
    }
}

#[tokio::test]
async fn functions_export_and_import_round_trip_disabled_with_new_ids() {
    let client = client().await;
    let created = ok(&client, "FunctionUpsert", json!({"function": {
        "name": "HEAL", "type": "active", "pattern": "/@\\.HEAL\\((\\d+)\\)/g", "description": "治疗",
        "executor": "snapshot.hp = (snapshot.hp || 0) + args[0];"
    }})).await;
    let exported = ok(&client, "FunctionExport", json!({"ids": [created["id"]]})).await;
    assert_eq!(exported["version"], "1.0");
    assert_eq!(exported["functions"][0]["name"], "HEAL");
    let imported = ok(
        &client,
        "FunctionImport",
        json!({"data": exported.to_string(), "characterId": "elf"}),
    )
    .await;
    let copy = &imported["imported"][0];
    assert_ne!(copy["id"], created["id"]);
    assert_eq!(copy["enabled"], false);
    let local = ok(&client, "FunctionList", json!({"characterId": "elf"})).await["local"].clone();
    assert_eq!(local, json!([copy]));
    let mut again = ok(&client, "FunctionExport", json!({"characterId": "elf"})).await;
    again["functions"][0]["id"] = created["id"].clone();
    again["functions"][0]["enabled"] = json!(true);
    assert_eq!(again, exported);
    // A whole library's export holds its built-ins too: an import leaves them out.
    let whole = ok(&client, "FunctionExport", json!({})).await;
    assert!(whole["functions"].as_array().unwrap().len() > 1, "{whole}");
    let reimported = ok(
        &client,
        "FunctionImport",
        json!({"data": whole, "characterId": "dwarf"}),
    )
    .await;
    let names: Vec<&str> = (reimported["imported"].as_array().unwrap().iter())
        .map(|function| function["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["HEAL"]);
    let note = reimported["note"].as_str().unwrap();
    assert!(
        note.contains("built-in function(s) of the export left out"),
        "{note}"
    );
    let unknown = refused(
        &client,
        "FunctionImport",
        json!({"data": {"functions": "nope"}}),
    )
    .await;
    assert_golden_text("snapshots/import-not-an-export.txt", &unknown);
}

#[tokio::test]
async fn the_prompt_lists_the_enabled_functions_and_snapshots_are_resources() {
    let client = client().await;
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("state-functions"))
        .await
        .unwrap();
    let rmcp::model::ContentBlock::Text(content) = &prompt.messages[0].content else {
        panic!("not text: {prompt:?}");
    };
    let text = &content.text;
    assert!(text.starts_with("<variable_system_functions>\n你可以使用以下函数来更新游戏状态：\n\n@.SET(\"path.to.var\", value); // 设置变量\n示例：@.SET(\"角色.名字\", \"张三\");\n\n@.ADD(\"path.to.number\", 5); // 数值加法\n示例：@.ADD(\"角色.金币\", 100);\n"), "{text}");
    assert!(text.ends_with("</variable_system_functions>"), "{text}");
    assert!(
        !text.contains("MVU"),
        "disabled functions are left out: {text}"
    );

    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "My Chat/1", "text": "@.SET(\"a\", 1);"}),
    )
    .await;
    let uri = format!(
        "snapshot://My%20Chat%2F1/{}",
        applied["snapshotId"].as_str().unwrap()
    );
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri.as_str()))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("not text: {read:?}");
    };
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"a": 1})
    );
    let wrong_chat = format!(
        "snapshot://Other/{}",
        applied["snapshotId"].as_str().unwrap()
    );
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new(wrong_chat.as_str()))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn snapshots_survive_a_restart() {
    let directory = tempfile::tempdir().unwrap();
    let data_dir = directory.path().to_str().unwrap();
    let first = spawn_binary(
        &["--data-dir", data_dir],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    ok(
        &first,
        "TemplateSet",
        json!({"characterId": "hero", "template": {"hp": 10}}),
    )
    .await;
    let applied = ok(
        &first,
        "SnapshotApply",
        json!({"chatFile": "c", "characterId": "hero", "text": "@.SUB(\"hp\", 3);"}),
    )
    .await;
    first.cancel().await.unwrap();
    let second = spawn_binary(
        &["--data-dir", data_dir],
        TestClient::new(Elicitation::Unsupported),
    )
    .await;
    assert_eq!(
        snapshot(&second, &applied["snapshotId"]).await,
        json!({"hp": 7})
    );
    assert_eq!(
        ok(&second, "TemplateGet", json!({"characterId": "hero"})).await["template"],
        json!({"hp": 10})
    );
}

mod processing {
    //! Property: processing a chat in one `SnapshotProcess` equals processing it message by
    //! message (writing the bindings back each time), for every message's snapshot.

    use proptest::prelude::*;
    use serde_json::{Value, json};
    use synapse_mcp::snapshots::Snapshots;
    use synapse_mcp::snapshots::chat::ChatMessage;
    use synapse_mcp::snapshots::javascript::Limits;
    use synapse_mcp::store::SqliteStore;

    fn call() -> impl Strategy<Value = String> {
        prop_oneof![
            (0..5i64).prop_map(|n| format!("@.SET(\"a\", {n});")),
            (-3..4i64).prop_map(|n| format!("@.ADD(\"a\", {n});")),
            (0..3i64).prop_map(|n| format!("@.APPEND(\"list\", {n});")),
            Just("@.UNSET(\"a\");".to_owned()),
            Just("@.REMOVE(\"list\", 0);".to_owned()),
            Just("@.SET(\"broken\", );".to_owned()),
            Just("plain words".to_owned()),
        ]
    }

    fn message() -> impl Strategy<Value = Value> {
        (
            any::<bool>(),
            prop::collection::vec(prop::collection::vec(call(), 0..4), 1..3),
            0..3usize,
        )
            .prop_map(|(is_user, swipes, pick)| {
                let texts: Vec<String> = swipes.iter().map(|calls| calls.join(" ")).collect();
                let swipe_id = pick % texts.len();
                json!({"is_user": is_user, "swipe_id": swipe_id, "swipes": texts})
            })
    }

    fn service() -> Snapshots {
        Snapshots::new(
            SqliteStore::open_in_memory().unwrap(),
            "w",
            Limits::default(),
        )
    }

    /// Every AI message's bound snapshot value, in order.
    fn states(service: &Snapshots, messages: &[ChatMessage]) -> Vec<Option<Value>> {
        messages
            .iter()
            .filter(|message| message.is_ai())
            .map(|message| {
                message
                    .snapshot_id()
                    .map(|id| service.snapshot(id).unwrap().value)
            })
            .collect()
    }

    fn bind(messages: &mut [ChatMessage], processed: &synapse_mcp::snapshots::Processed) {
        for binding in &processed.bindings {
            messages[binding.message_index].bind(&binding.snapshot_id);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn one_call_equals_message_by_message(chat in prop::collection::vec(message(), 1..12)) {
            let template = json!({"a": 1, "list": []});
            let whole_service = service();
            let mut whole: Vec<ChatMessage> = serde_json::from_value(Value::Array(chat.clone())).unwrap();
            let processed = whole_service.process("c", &whole, None, Some(template.clone()), &|| false).unwrap();
            bind(&mut whole, &processed);

            let step_service = service();
            let mut stepwise: Vec<ChatMessage> = Vec::new();
            let mut last = None;
            for raw in chat {
                stepwise.push(serde_json::from_value(raw).unwrap());
                let step = step_service.process("c", &stepwise, None, Some(template.clone()), &|| false).unwrap();
                bind(&mut stepwise, &step);
                last = Some(step);
            }
            prop_assert_eq!(states(&whole_service, &whole), states(&step_service, &stepwise));
            prop_assert_eq!(&processed.vs_stat_data, &last.unwrap().vs_stat_data);
        }
    }
}

/// `examples/sillytavern_chat.json` is a SillyTavern chat as a bridge sends it; it stays a
/// working example.
#[tokio::test]
async fn the_sillytavern_example_processes_as_documented() {
    let client = client().await;
    let processed = ok(&client, "SnapshotProcess", example()).await;
    assert_eq!(processed["errors"], json!([]));
    assert_eq!(indexes(&processed), vec![(0, 0), (2, 1), (4, 0)]);
    assert_eq!(
        processed["vs_stat_data"],
        json!({
            "世界": {"时间": "第1天 黄昏", "地点": "灯塔"},
            "角色": {"名字": "林", "生命值": 85, "金币": 65, "称号": "海妖猎手"},
            "背包": ["旧地图", "短剑", "治疗药水", "治疗药水"]
        })
    );
}

/// `SnapshotProcess` is not cached as variables (whole chats are too large), yet it offers
/// `_outputPath`: a plan keeps the processed chat's state in the state document.
#[tokio::test]
async fn snapshot_process_offers_an_output_path_and_writes_state() {
    let client = client().await;
    let tools = client.list_all_tools().await.unwrap();
    let process = tools
        .iter()
        .find(|tool| tool.name == "SnapshotProcess")
        .unwrap();
    assert!(
        process.input_schema["properties"]
            .as_object()
            .unwrap()
            .contains_key("_outputPath"),
        "{:?}",
        process.input_schema
    );
    let messages = vec![user("开始"), ai(0, &["@.SET(\"金币\", 7);"])];
    let processed = ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "kept", "messages": messages, "_outputPath": "†state.rp"}),
    )
    .await;
    assert_eq!(processed["vs_stat_data"], json!({"金币": 7}));
    let read = call(
        &client,
        "ReadState",
        json!({"path": "rp.vs_stat_data.金币"}),
    )
    .await;
    assert!(!is_error(&read), "{}", text(&read));
    assert!(text(&read).ends_with("\n7"), "{}", text(&read));
}

/// One path grammar over stdio, with the snapshot tools: `_outputPath`, `†` references and
/// `ReadState` take Chinese keys, and a quoted segment names a key that holds a dot.
#[tokio::test]
async fn unicode_and_quoted_paths_reach_snapshot_tools_over_stdio() {
    let client = client().await;
    let messages = vec![
        user("开始"),
        ai(
            0,
            &["@.SET(\"角色.金币\", 7); @.SET(\"角色.名字\", \"林\");"],
        ),
    ];
    ok(
        &client,
        "SnapshotProcess",
        json!({"chatFile": "路径", "messages": messages, "_outputPath": "†state.\"存档.v1\""}),
    )
    .await;
    // A reference that is the whole argument keeps its JSON type; one inside a text is spliced.
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({
            "chatFile": "路径",
            "baseId": "†state.\"存档.v1\".latestSnapshotId",
            "text": "@.SET(\"副本.金币\", †state.\"存档.v1\".vs_stat_data.角色.金币);"
        }),
    )
    .await;
    assert_eq!(
        applied["snapshot"],
        json!({"角色": {"金币": 7, "名字": "林"}, "副本": {"金币": 7}})
    );
    let read = call(
        &client,
        "ReadState",
        json!({"path": "\"存档.v1\".vs_stat_data.角色.名字"}),
    )
    .await;
    assert!(!is_error(&read), "{}", text(&read));
    assert!(text(&read).ends_with("\n\"林\""), "{}", text(&read));
    let unclosed = call(
        &client,
        "ReadState",
        json!({"path": "\"存档.v1.vs_stat_data"}),
    )
    .await;
    assert!(is_error(&unclosed));
    assert_golden_text("snapshots/read-state-unclosed.txt", &text(&unclosed));
    client.cancel().await.unwrap();
}

/// `count` AI replies, each after a user message, each setting `n`.
fn long_chat(count: usize) -> Vec<Value> {
    (0..count)
        .flat_map(|turn| {
            let call = format!("ok @.SET(\"n\", {turn});");
            [user("next"), ai(0, &[call.as_str()])]
        })
        .collect()
}

/// Sends `tools/call` (with a `progressToken` when given) over a raw session; the progress
/// notifications that came before the answer, and the answer.
async fn call_with_progress(
    session: &mut crate::common::RawSession,
    id: i64,
    tool: &str,
    arguments: Value,
    token: Option<&str>,
) -> (Vec<Value>, Value) {
    let mut params = json!({"name": tool, "arguments": arguments});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    session
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
        .await;
    let mut progress = Vec::new();
    loop {
        let message = session.message().await;
        if message["id"] == json!(id) {
            return (progress, message["result"].clone());
        }
        if message["method"] == json!("notifications/progress") {
            progress.push(message["params"].clone());
        }
    }
}

/// Checks a call's progress: each report counts up, at most one per 100 ms of the call (and the
/// last), and the last says all `total` messages are done.
fn assert_progress(progress: &[Value], token: &str, total: u32, elapsed: std::time::Duration) {
    let total = f64::from(total);
    let done: Vec<f64> = progress
        .iter()
        .map(|report| report["progress"].as_f64().unwrap())
        .collect();
    assert!(done.windows(2).all(|pair| pair[0] < pair[1]), "{done:?}");
    let most = usize::try_from(elapsed.as_millis() / 100).unwrap() + 2;
    assert!(
        progress.len() <= most,
        "{} reports in {elapsed:?}",
        progress.len()
    );
    for report in progress {
        let done = report["progress"].as_f64().unwrap();
        assert_eq!(
            report,
            &json!({"progressToken": token, "progress": done, "total": total,
                "message": format!("{done} of {total} messages")})
        );
    }
    assert_eq!(done.last(), Some(&total), "{progress:?}");
}

#[tokio::test]
async fn long_chats_report_progress_when_the_client_asks_for_it() {
    let directory = tempfile::tempdir().unwrap();
    let config = directory.path().join("config.toml");
    std::fs::write(&config, "[tools.SnapshotReprocess]\nexecution = \"auto\"\n").unwrap();
    let config = config.display().to_string();
    let mut session = crate::common::RawSession::initialized(&["--config", &config]).await;
    let total: u32 = 3000;
    let messages = long_chat(3000);
    let arguments = json!({"chatFile": "long-1", "messages": messages});

    let started = std::time::Instant::now();
    let (progress, answer) = call_with_progress(
        &mut session,
        1,
        "SnapshotProcess",
        arguments.clone(),
        Some("p1"),
    )
    .await;
    assert_eq!(answer["isError"], json!(false), "{answer}");
    assert_eq!(
        answer["structuredContent"]["bindings"]
            .as_array()
            .unwrap()
            .len(),
        3000
    );
    assert_progress(&progress, "p1", total, started.elapsed());

    // Without a token, none; the same chat again, so that only its last message is new.
    let (progress, answer) =
        call_with_progress(&mut session, 2, "SnapshotProcess", arguments, None).await;
    assert_eq!(answer["isError"], json!(false), "{answer}");
    assert_eq!(progress, Vec::<Value>::new());

    // Reprocessing from message 1 recomputes every reply after it.
    let arguments = json!({"chatFile": "long-1", "fromIndex": 1, "messages": messages});
    let started = std::time::Instant::now();
    let (progress, answer) =
        call_with_progress(&mut session, 3, "SnapshotReprocess", arguments, Some("p3")).await;
    assert_eq!(answer["isError"], json!(false), "{answer}");
    assert_progress(&progress, "p3", total, started.elapsed());
}
