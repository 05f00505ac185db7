//! Arranging the function library and switching processing, over stdio, on the SillyTavern chat
//! of `examples/sillytavern_chat.json`: a dry run (`FunctionTest`) stores nothing, a typo'd call
//! is reported with its suggestion by every tool that applies calls, a switched-off chat or
//! character is not processed (and says so, across a restart), and moving a function changes
//! which chats run it.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Client, Elicitation, TestClient, assert_golden, assert_golden_text, assert_valid_output, call,
    is_error, spawn_binary, text,
};
use crate::snapshots::{example, ok, refused};

/// A client over stdio on a durable store, whose user approves what the deleting tools ask.
async fn client(data_dir: &std::path::Path) -> Client {
    spawn_binary(
        &["--data-dir", data_dir.to_str().unwrap()],
        TestClient::new(Elicitation::Accept(json!({"approve": true}))),
    )
    .await
}

/// A call that succeeds with a result that matches the tool's output schema.
async fn checked(client: &Client, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments).await;
    assert!(!is_error(&result), "{tool} failed: {}", text(&result));
    assert_valid_output(client, tool, &result).await;
    result.structured_content.unwrap()
}

/// Every row of every table of the store, as text: what "nothing stored" is compared on.
fn dump(data_dir: &std::path::Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(data_dir.join("synapse.db")).unwrap();
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut rows = Vec::new();
    for table in tables {
        let mut statement = connection
            .prepare(&format!("SELECT * FROM \"{table}\""))
            .unwrap();
        let columns = statement.column_count();
        let mut found: Vec<String> = statement
            .query_map([], |row| {
                let cells: Vec<String> = (0..columns)
                    .map(|column| format!("{:?}", row.get_ref(column).unwrap()))
                    .collect();
                Ok(format!("{table}: {}", cells.join(" | ")))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        found.sort();
        rows.extend(found);
    }
    rows
}

#[tokio::test]
async fn function_test_shows_each_step_and_stores_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let processed = ok(&client, "SnapshotProcess", example()).await;
    let latest = processed["latestSnapshotId"].clone();
    let before = dump(directory.path());

    let text = "林数了数钱袋。\n@.ADD(\"角色.金币\", 5);\n@.ADDD(\"角色.金币\", 100);\n@.GIVE(\"旧船票\");";
    let draft = json!({
        "name": "GIVE", "type": "active",
        "pattern": "@\\.GIVE\\(\"([^\"]+)\"\\);?",
        "executor": "snapshot.背包.push(args[0]); return snapshot;"
    });
    // Positions are in characters.
    let at = |needle: &str| text[..text.find(needle).unwrap()].chars().count();
    let tested = checked(
        &client,
        "FunctionTest",
        json!({"text": text, "snapshot": latest, "characterId": "艾拉.png", "function": draft}),
    )
    .await;
    let steps: Vec<(Value, Value, Value)> = tested["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            (
                step["function"].clone(),
                step["kind"].clone(),
                step["position"].clone(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (json!("ADD"), json!("call"), json!(at("@.ADD("))),
            (json!("ADDD"), json!("unknown"), json!(at("@.ADDD"))),
            (json!("GIVE"), json!("call"), json!(at("@.GIVE"))),
        ]
    );
    assert_eq!(tested["steps"][0]["arguments"], json!(["角色.金币", 5]));
    assert_eq!(tested["steps"][0]["snapshot"]["角色"]["金币"], json!(70));
    assert_eq!(tested["steps"][2]["arguments"], json!(["旧船票"]));
    assert_eq!(
        tested["errors"],
        json!([{"function": "ADDD", "position": at("@.ADDD"), "message": "unknown function `ADDD`; did you mean `ADD`?", "suggestion": "ADD"}])
    );
    assert_eq!(tested["snapshot"]["角色"]["金币"], json!(70));
    assert_eq!(
        tested["snapshot"]["背包"],
        json!(["旧地图", "短剑", "治疗药水", "治疗药水", "旧船票"])
    );
    assert_eq!(tested["changed"], json!(true));

    // From a state given with the call, and with the library alone.
    let from_state = checked(
        &client,
        "FunctionTest",
        json!({"text": "@.SET(\"天气\", \"雨\"); @.BOGUS(1);", "snapshot": {"天气": "晴"}}),
    )
    .await;
    assert_eq!(from_state["snapshot"], json!({"天气": "雨"}));
    let bogus = &from_state["errors"][0];
    assert_eq!(bogus["function"], "BOGUS");
    assert!(bogus.get("suggestion").is_none(), "{bogus}");
    assert_golden(
        "tests/golden/function_tools/test-unknown-function.json",
        &from_state["errors"],
    );

    // Bad input names the value and the fix, and changes nothing either.
    let missing = refused(
        &client,
        "FunctionTest",
        json!({"text": "x", "snapshot": "no-such-id"}),
    )
    .await;
    assert_golden_text("function_tools/test-unknown-snapshot.txt", &missing);
    let broken = refused(
        &client,
        "FunctionTest",
        json!({"text": "x", "function": {"name": "BAD", "type": "active", "pattern": "(", "executor": "return snapshot"}}),
    )
    .await;
    assert_golden_text("function_tools/test-bad-regex.txt", &broken);
    let scalar = refused(&client, "FunctionTest", json!({"text": "x", "snapshot": 5})).await;
    assert_golden_text("function_tools/test-scalar-snapshot.txt", &scalar);

    assert_eq!(
        dump(directory.path()),
        before,
        "FunctionTest stored something"
    );
}

#[tokio::test]
async fn typos_are_reported_with_a_suggestion_and_the_rest_still_applies() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let mut chat = example();
    let last = &mut chat["messages"][4];
    let typo = last["swipes"][0]
        .as_str()
        .unwrap()
        .replace("@.ADD(\"角色.金币\", 35);", "@.ADDD(\"角色.金币\", 35);");
    last["swipes"][0] = json!(typo);
    let position = typo[..typo.find("@.ADDD").unwrap()].chars().count();
    let processed = checked(&client, "SnapshotProcess", chat).await;
    assert_eq!(
        processed["errors"],
        json!([{
            "messageIndex": 4, "swipeId": 0, "function": "ADDD", "position": position,
            "message": "unknown function `ADDD`; did you mean `ADD`?", "suggestion": "ADD"
        }])
    );
    // Every other call of the message applied: only the 35 coins are missing.
    assert_eq!(processed["vs_stat_data"]["角色"]["金币"], json!(30));
    assert_eq!(processed["vs_stat_data"]["角色"]["生命值"], json!(85));
    assert_eq!(processed["vs_stat_data"]["角色"]["称号"], json!("海妖猎手"));

    let applied = checked(
        &client,
        "SnapshotApply",
        json!({"chatFile": "notes", "text": "@.SET(\"a\", 1); @.apend(\"b\", 2); @.TIME(\"黄昏\");"}),
    )
    .await;
    assert_eq!(applied["snapshot"], json!({"a": 1, "time": "黄昏"}));
    assert_eq!(applied["errors"][0]["suggestion"], "APPEND");
    assert_eq!(applied["errors"].as_array().unwrap().len(), 1);

    // A disabled function's call is not unknown: it says how to turn it on.
    checked(
        &client,
        "FunctionEnable",
        json!({"ids": ["TIME"], "enabled": false}),
    )
    .await;
    let disabled = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "notes", "text": "@.TIME(\"夜\");"}),
    )
    .await;
    assert_eq!(disabled["snapshot"], json!({}));
    let message = disabled["errors"][0]["message"].as_str().unwrap();
    assert_golden_text("function_tools/disabled-function.txt", message);
}

/// Reprocessing a switched-off chat computes nothing, so it drops nothing either.
async fn reprocessing_drops_nothing(client: &Client, data_dir: &std::path::Path, bound: &Value) {
    let before = dump(data_dir);
    let reprocessed = ok(
        client,
        "SnapshotReprocess",
        json!({
            "chatFile": bound["chatFile"],
            "fromIndex": 0,
            "messages": bound["messages"],
            "characterId": bound["characterId"]
        }),
    )
    .await;
    assert_eq!(reprocessed["disabled"]["by"], "chat");
    assert_eq!(
        (
            reprocessed["cleared"].clone(),
            reprocessed["deleted"].clone()
        ),
        (json!([]), json!(0))
    );
    assert_eq!(
        dump(data_dir),
        before,
        "a switched-off reprocess changed the store"
    );
}

#[tokio::test]
async fn switched_off_chats_and_characters_are_not_processed_and_say_so() {
    let directory = tempfile::tempdir().unwrap();
    let chat = example();
    {
        let client = client(directory.path()).await;
        let switches = checked(
            &client,
            "SnapshotEnable",
            json!({"characterId": "艾拉.png", "setting": "off"}),
        )
        .await;
        assert_eq!(
            switches,
            json!({"chats": {}, "characters": {"艾拉.png": false}})
        );
        client.cancel().await.unwrap();
    }
    // The switch is durable: a new process still sees it.
    let client = client(directory.path()).await;
    let before = dump(directory.path());
    let skipped = checked(&client, "SnapshotProcess", chat.clone()).await;
    assert_eq!(skipped["bindings"], json!([]));
    assert_eq!(
        skipped["storage"],
        json!({"snapshots": 0, "newNodes": 0, "newBytes": 0})
    );
    assert_golden(
        "tests/golden/function_tools/disabled-by-character.json",
        &skipped["disabled"],
    );
    assert_eq!(skipped["vs_stat_data"], chat["template"]);
    assert_eq!(
        dump(directory.path()),
        before,
        "a disabled SnapshotProcess stored something"
    );

    // The chat's own setting wins over its character's.
    let chat_file = chat["chatFile"].clone();
    ok(
        &client,
        "SnapshotEnable",
        json!({"chatFile": chat_file, "setting": "on"}),
    )
    .await;
    let processed = ok(&client, "SnapshotProcess", chat.clone()).await;
    assert!(processed.get("disabled").is_none(), "{processed}");
    assert_eq!(processed["bindings"].as_array().unwrap().len(), 3);
    let switches = ok(
        &client,
        "SnapshotEnable",
        json!({"chatFile": chat_file, "setting": "off"}),
    )
    .await;
    assert_eq!(
        switches["chats"],
        json!({chat_file.as_str().unwrap(): false})
    );
    let mut bound = chat.clone();
    for binding in processed["bindings"].as_array().unwrap() {
        let index = usize::try_from(binding["messageIndex"].as_u64().unwrap()).unwrap();
        let swipe = usize::try_from(binding["swipeId"].as_u64().unwrap()).unwrap();
        bound["messages"][index]["swipes_info"][swipe]["st_var_system_snapshot_id"] =
            binding["snapshotId"].clone();
    }
    let off = ok(&client, "SnapshotProcess", bound.clone()).await;
    assert_eq!(off["disabled"]["by"], "chat");
    assert_eq!(off["latestSnapshotId"], processed["latestSnapshotId"]);
    assert_eq!(
        off["vs_stat_data"], processed["vs_stat_data"],
        "the state as it stands"
    );
    reprocessing_drops_nothing(&client, directory.path(), &bound).await;

    let both = refused(
        &client,
        "SnapshotEnable",
        json!({"chatFile": "a", "characterId": "b", "setting": "on"}),
    )
    .await;
    assert_golden_text("function_tools/enable-both.txt", &both);
    let wrong = refused(
        &client,
        "SnapshotEnable",
        json!({"chatFile": "a", "setting": "yes"}),
    )
    .await;
    assert_golden_text("function_tools/enable-bad-setting.txt", &wrong);
}

#[tokio::test]
async fn moving_a_function_changes_which_library_applies() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let heal = ok(&client, "FunctionUpsert", json!({"function": {
        "name": "HEAL", "type": "active", "description": "治疗：恢复生命值",
        "pattern": "@\\.HEAL\\((\\d+)\\);?",
        "executor": "_.set(snapshot, '角色.生命值', _.get(snapshot, '角色.生命值', 0) + args[0]); return snapshot;"
    }}))
    .await;
    let text = "林喝下药水。@.HEAL(10);";
    let apply = |character: &'static str| {
        let client = &client;
        async move {
            ok(
                client,
                "SnapshotApply",
                json!({"chatFile": "heal", "characterId": character, "text": text}),
            )
            .await
        }
    };
    assert_eq!(
        apply("艾拉.png").await["snapshot"],
        json!({"角色": {"生命值": 10}})
    );
    assert_eq!(
        apply("林.png").await["snapshot"],
        json!({"角色": {"生命值": 10}})
    );

    let moved = checked(
        &client,
        "FunctionMove",
        json!({"id": "HEAL", "toCharacterId": "艾拉.png"}),
    )
    .await;
    assert_eq!(
        moved,
        json!({"function": heal, "from": "global", "to": "character:艾拉.png"})
    );
    assert_eq!(
        apply("艾拉.png").await["snapshot"],
        json!({"角色": {"生命值": 10}})
    );
    let elsewhere = apply("林.png").await;
    assert_eq!(elsewhere["snapshot"], json!({}));
    assert_eq!(elsewhere["errors"][0]["function"], "HEAL");
    let listed = ok(&client, "FunctionList", json!({"characterId": "艾拉.png"})).await;
    assert_eq!(listed["local"], json!([heal]));

    // Bad input names the value and changes nothing.
    let unknown = refused(
        &client,
        "FunctionMove",
        json!({"id": "HEAL", "toCharacterId": "林.png"}),
    )
    .await;
    assert_golden_text("function_tools/move-unknown.txt", &unknown);
    let builtin = refused(
        &client,
        "FunctionMove",
        json!({"id": "SET", "toCharacterId": "林.png"}),
    )
    .await;
    assert_golden_text("function_tools/move-built-in.txt", &builtin);
    assert_eq!(
        ok(&client, "FunctionList", json!({"characterId": "艾拉.png"})).await,
        listed
    );

    // Back to the global library.
    let back = ok(
        &client,
        "FunctionMove",
        json!({"id": heal["id"], "characterId": "艾拉.png"}),
    )
    .await;
    assert_eq!(back["to"], "global");
    assert_eq!(
        apply("林.png").await["snapshot"],
        json!({"角色": {"生命值": 10}})
    );
}

#[tokio::test]
async fn a_new_function_without_an_order_runs_last() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let passive = |name: &str| {
        json!({"function": {
            "name": name, "type": "passive", "timing": "after_active",
            "executor": format!("snapshot.last = '{name}'; return snapshot;")
        }})
    };
    ok(&client, "FunctionUpsert", passive("FIRST")).await;
    // Reordered, the library is numbered 1, 2, …; a function created after that comes next.
    let reordered = checked(&client, "FunctionReorder", json!({"ids": ["FIRST"]})).await;
    let numbered = reordered["functions"].as_array().unwrap().len();
    let created = ok(&client, "FunctionUpsert", passive("LATER")).await;
    assert_eq!(created["order"], json!(numbered + 1));
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "order", "text": "hello"}),
    )
    .await;
    assert_eq!(applied["snapshot"], json!({"last": "LATER"}));
}

#[tokio::test]
async fn reordering_and_switching_functions_in_bulk() {
    let directory = tempfile::tempdir().unwrap();
    let client = client(directory.path()).await;
    let heal = ok(
        &client,
        "FunctionUpsert",
        json!({"function": {
            "name": "HEAL", "type": "active", "order": 50,
            "pattern": "@\\.HEAL\\((\\d+)\\);?",
            "executor": "snapshot.hp = (snapshot.hp || 0) + args[0]; return snapshot;"
        }}),
    )
    .await;
    // Back to the global library, first in the running order, then off in bulk.
    let reordered = checked(&client, "FunctionReorder", json!({"ids": ["HEAL", "SET"]})).await;
    let first: Vec<(Value, Value)> = reordered["functions"].as_array().unwrap()[..3]
        .iter()
        .map(|function| (function["name"].clone(), function["order"].clone()))
        .collect();
    assert_eq!(
        first,
        [
            (json!("HEAL"), json!(1)),
            (json!("SET"), json!(2)),
            (json!("ADD"), json!(3))
        ]
    );
    let switched = ok(
        &client,
        "FunctionEnable",
        json!({"ids": ["HEAL", "ADD"], "enabled": false}),
    )
    .await;
    assert_eq!(switched["functions"].as_array().unwrap().len(), 2);
    let twice = refused(
        &client,
        "FunctionEnable",
        json!({"ids": ["HEAL", heal["id"]], "enabled": true}),
    )
    .await;
    assert_golden_text("function_tools/enable-twice.txt", &twice);
    let applied = ok(
        &client,
        "SnapshotApply",
        json!({"chatFile": "bulk", "text": "@.HEAL(10); @.ADD(\"hp\", 1); @.SET(\"ok\", true);"}),
    )
    .await;
    assert_eq!(applied["snapshot"], json!({"ok": true}));
    let reasons: Vec<&str> = applied["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| error["message"].as_str().unwrap())
        .collect();
    assert_golden(
        "tests/golden/function_tools/disabled-functions-skipped.json",
        &json!(reasons),
    );
}
