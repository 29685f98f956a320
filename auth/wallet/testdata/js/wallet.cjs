// Cross-checks package wallet against each family's JavaScript library,
// as the wallet's interop test runs it: node wallet.cjs < cases.json. For
// each case (keys as the auth SDK gives them, and what Go signed with
// them) it derives the addresses with ethers, @solana/web3.js and
// starknet.js, checks Go's signatures and transactions, and signs with the
// same keys for Go to check. One JSON object out.
const { Wallet, verifyMessage, verifyTypedData, Transaction: EvmTx, getBytes } = require("ethers");
const web3 = require("@solana/web3.js");
const { ec, hash, CallData, num } = require("starknet");

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));

const DAM = { L1: 0, L2: 1 };
function bounds(rb) {
  const b = (x) => ({ max_amount: BigInt(x.max_amount), max_price_per_unit: BigInt(x.max_price_per_unit) });
  return { l1_gas: b(rb.l1_gas), l2_gas: b(rb.l2_gas), l1_data_gas: b(rb.l1_data_gas) };
}

function starknetCase(c) {
  const priv = "0x" + ec.starkCurve.grindKey(c.privKey);
  const pub = ec.starkCurve.getStarkKey(priv);
  const address = hash.calculateContractAddressFromHash(pub, c.classHash, CallData.compile([pub]), 0);
  const inv = c.invoke;
  const invokeHash = hash.calculateInvokeTransactionHash({
    senderAddress: inv.sender_address, version: inv.version, compiledCalldata: inv.calldata, chainId: c.chainId,
    nonce: inv.nonce, accountDeploymentData: inv.account_deployment_data,
    nonceDataAvailabilityMode: DAM[inv.nonce_data_availability_mode], feeDataAvailabilityMode: DAM[inv.fee_data_availability_mode],
    resourceBounds: bounds(inv.resource_bounds), tip: inv.tip, paymasterData: inv.paymaster_data,
  });
  const dep = c.deploy;
  const deployAddress = hash.calculateContractAddressFromHash(dep.contract_address_salt, dep.class_hash, dep.constructor_calldata, 0);
  const deployHash = hash.calculateDeployAccountTransactionHash({
    contractAddress: deployAddress, classHash: dep.class_hash, compiledConstructorCalldata: dep.constructor_calldata,
    salt: dep.contract_address_salt, version: dep.version, chainId: c.chainId, nonce: dep.nonce,
    nonceDataAvailabilityMode: DAM[dep.nonce_data_availability_mode], feeDataAvailabilityMode: DAM[dep.fee_data_availability_mode],
    resourceBounds: bounds(dep.resource_bounds), tip: dep.tip, paymasterData: dep.paymaster_data,
  });
  const full = ec.starkCurve.getPublicKey(priv);
  const goSig = (h, sig) => ec.starkCurve.verify(new ec.starkCurve.Signature(BigInt(sig[0]), BigInt(sig[1])), h, full);
  const js = ec.starkCurve.sign(invokeHash, priv);
  return {
    starkPub: pub, starkAddress: address, invokeHash, deployHash, deployAddress,
    goInvokeSigOK: goSig(invokeHash, inv.signature), goDeploySigOK: goSig(deployHash, dep.signature),
    jsSig: [num.toHex(js.r), num.toHex(js.s)],
  };
}

async function evmCase(c) {
  const w = new Wallet("0x" + c.privKey);
  const msg = getBytes("0x" + c.message);
  const td = c.typedData;
  const types = Object.fromEntries(Object.entries(td.types).filter(([k]) => k !== "EIP712Domain"));
  return {
    evmAddress: w.address,
    personalFrom: verifyMessage(msg, c.personalSig),
    typedFrom: verifyTypedData(td.domain, types, td.message, c.typedSig),
    txFroms: c.evmTxs.map((raw) => EvmTx.from(raw).from),
    txTypes: c.evmTxs.map((raw) => EvmTx.from(raw).type),
    jsPersonalSig: await w.signMessage(msg),
  };
}

function solanaCase(c) {
  const kp = web3.Keypair.fromSecretKey(Buffer.from(c.ed25519PrivKey, "hex"));
  const goTx = web3.Transaction.from(Buffer.from(c.solTx, "base64"));
  const tx = new web3.Transaction({ recentBlockhash: c.blockhash, feePayer: kp.publicKey });
  tx.add(web3.SystemProgram.transfer({ fromPubkey: kp.publicKey, toPubkey: new web3.PublicKey(c.solTo), lamports: 1234 }));
  tx.sign(kp);
  return {
    solAddress: kp.publicKey.toBase58(),
    goTxOK: goTx.verifySignatures() && goTx.signatures[0].publicKey.equals(kp.publicKey),
    jsTx: tx.serialize().toString("base64"),
  };
}

(async () => {
  const out = [];
  for (const c of input.cases) {
    out.push({ ...(await evmCase(c)), ...solanaCase(c), ...starknetCase(c) });
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
